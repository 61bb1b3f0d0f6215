"""The standard image's recipe, pin, reproducible rootfs tarball and cache (no engine needed)."""

import os
import stat
import tarfile
from pathlib import Path

import pytest

from runner.images import build, prepare
from runner.images.build import (
    ImageError,
    cache_path,
    file_digest,
    load_recipe,
    read_pin,
    write_pin,
    write_rootfs_tar,
)
from tests.support.providers import EPOCH, recipe


def make_tree(root: Path, reverse=False, mtime=EPOCH + 10_000):
    names = ["b.txt", "a.txt", "sub/c.txt", "var/log/build.log", "proc/1", "etc/hostname"]
    names += ["var/lib/dpkg/status", "var/lib/dpkg/status-old"]
    for name in sorted(names, reverse=reverse):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"content of {name}\n")
    os.link(root / "a.txt", root / "sub/a-link.txt")
    os.symlink("../a.txt", root / "sub/a-symlink")
    os.chmod(root / "b.txt", 0o755)
    for path in [root, *root.rglob("*")]:
        os.utime(path, (mtime, mtime), follow_symlinks=False)


def test_it_writes_the_same_bytes_whatever_the_creation_order_and_build_time(tmp_path):
    make_tree(tmp_path / "one")
    make_tree(tmp_path / "two", reverse=True, mtime=EPOCH + 99_999)
    first = write_rootfs_tar(tmp_path / "one", tmp_path / "one.tar", recipe())
    second = write_rootfs_tar(tmp_path / "two", tmp_path / "two.tar", recipe())
    assert first == second == file_digest(tmp_path / "one.tar")
    assert first.startswith("sha256:")


def test_it_sorts_entries_clamps_mtimes_and_writes_numeric_owners(tmp_path):
    make_tree(tmp_path / "root")
    os.utime(tmp_path / "root/a.txt", (EPOCH - 5, EPOCH - 5))
    write_rootfs_tar(tmp_path / "root", tmp_path / "root.tar", recipe())
    with tarfile.open(tmp_path / "root.tar") as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == [
        "a.txt",
        "b.txt",
        "etc",
        "proc",
        "sub",
        "sub/a-link.txt",
        "sub/a-symlink",
        "sub/c.txt",
        "var",
        "var/lib",
        "var/lib/dpkg",
        "var/lib/dpkg/status",
        "var/log",
    ]
    by_name = {m.name: m for m in members}
    assert by_name["a.txt"].mtime == EPOCH - 5  # older times are kept
    hard_linked = {"a.txt", "sub/a-link.txt"}
    assert {m.mtime for n, m in by_name.items() if n not in hard_linked} == {EPOCH}
    assert all(m.uname == "" and m.gname == "" for m in members)
    assert stat.S_IMODE(by_name["b.txt"].mode) == 0o755
    assert by_name["sub/a-link.txt"].islnk() and by_name["sub/a-link.txt"].linkname == "a.txt"
    assert by_name["sub/a-symlink"].issym() and by_name["sub/a-symlink"].linkname == "../a.txt"


def test_it_leaves_no_partial_tarball_when_the_root_is_missing(tmp_path):
    with pytest.raises(ImageError, match="does not exist"):
        write_rootfs_tar(tmp_path / "absent", tmp_path / "out.tar", recipe())
    assert list(tmp_path.iterdir()) == []


def test_it_builds_with_debootstrap_and_caches_the_tarball_by_digest(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "debootstrap"
    fake.parent.mkdir()
    # A stand-in for debootstrap: writes a tiny root and records its arguments and environment.
    fake.write_text(
        "#!/bin/sh\n"
        "for a; do target=$mirror_before; mirror_before=$a; done\n"
        'mkdir -p "$target/etc" && echo "$SOURCE_DATE_EPOCH" > "$target/etc/epoch"\n'
        'echo "$@" > "$target/etc/arguments"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    path, digest = build.build_rootfs(recipe(), tmp_path / "cache", log=lambda m: None)
    assert path == cache_path(recipe(), tmp_path / "cache", digest)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [path.name]  # scratch removed
    with tarfile.open(path) as tar:
        assert tar.extractfile("etc/epoch").read() == f"{EPOCH}\n".encode()
        assert "app" in tar.getnames()
        arguments = tar.extractfile("etc/arguments").read().decode().split()
    # The mirror is plain HTTP: signatures are checked, against a keyring named explicitly.
    assert arguments[:2] == ["--force-check-gpg", f"--keyring={build.DEBIAN_KEYRING}"]


def test_it_refuses_to_build_without_debians_keyring(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "DEBIAN_KEYRING", tmp_path / "absent.gpg")
    monkeypatch.setattr(build.shutil, "which", lambda name: "/usr/sbin/debootstrap")
    with pytest.raises(ImageError, match="absent.gpg is missing.*debian-archive-keyring"):
        build.build_rootfs(recipe(), tmp_path / "cache", log=lambda m: None)
    assert list((tmp_path / "cache").iterdir()) == []


def test_it_reports_a_failed_debootstrap_and_keeps_nothing(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "debootstrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'E: Could not download packages: fio' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    with pytest.raises(ImageError, match="(?s)debootstrap exited with 1.*fio"):
        build.build_rootfs(recipe(), tmp_path / "cache", log=lambda m: None)
    assert list((tmp_path / "cache").iterdir()) == []


def test_it_refuses_a_rebuilt_digest_that_differs_from_the_pin_unless_repinned(
    tmp_path, monkeypatch
):
    pin = tmp_path / "standard.sha256"
    write_pin("sha256:" + "0" * 64, pin)
    monkeypatch.setattr(build, "PIN_PATH", pin)
    built = tmp_path / "cache" / "built.tar"
    new_digest = "sha256:" + "1" * 64
    monkeypatch.setattr(prepare, "build_rootfs", lambda recipe, cache, log: (built, new_digest))
    with pytest.raises(ImageError, match="not the pinned sha256:0000.*--repin"):
        prepare.ensure_tarball(tmp_path / "cache", log=lambda m: None)
    assert read_pin(pin) == "sha256:" + "0" * 64
    assert prepare.ensure_tarball(tmp_path / "cache", repin=True, log=lambda m: None) == (
        built,
        new_digest,
        True,
    )
    assert read_pin(pin) == new_digest


def test_it_removes_a_damaged_cached_tarball(tmp_path, monkeypatch):
    pin = tmp_path / "standard.sha256"
    write_pin("sha256:" + "2" * 64, pin)
    monkeypatch.setattr(build, "PIN_PATH", pin)
    damaged = cache_path(load_recipe(), tmp_path, "sha256:" + "2" * 64)
    damaged.write_bytes(b"not the pinned rootfs")
    messages = []
    assert prepare.cached_tarball(tmp_path, log=messages.append) is None
    assert not damaged.exists()
    assert "damaged" in messages[0]


def test_it_names_the_file_and_field_of_a_bad_recipe(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text(Path(build.RECIPE_PATH).read_text() + "colour: blue\n")
    with pytest.raises(ImageError, match=r"recipe.yaml: fields: unknown \['colour'\]"):
        load_recipe(path)
    path.write_text(Path(build.RECIPE_PATH).read_text().replace("1735689600", "-1"))
    with pytest.raises(ImageError, match="source_date_epoch must be a positive"):
        load_recipe(path)


def test_it_refuses_a_malformed_pin(tmp_path):
    path = tmp_path / "pin"
    path.write_text("# comment\nsha256:abc\n")
    with pytest.raises(ImageError, match="pin.*sha256:<64 lowercase hex digits>"):
        read_pin(path)


def test_it_ships_a_valid_recipe_and_pin_with_what_the_workloads_need():
    standard = load_recipe()
    needed = {"bash", "coreutils", "procps", "git", "patch", "python3", "python3-venv"}
    needed |= {"python3-pip", "python3-pytest", "build-essential", "fio", "sysbench"}
    assert needed <= set(standard.packages)
    assert standard.workdir == "/app" and "app" in standard.make_dirs
    assert read_pin().startswith("sha256:")
