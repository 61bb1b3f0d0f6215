"""`manage.py bench image prepare|show` and the import of a rootfs into a real engine."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runner.images import build
from runner.images.build import read_pin, write_pin, write_rootfs_tar
from tests.support.providers import recipe

pytestmark = pytest.mark.podman


def bench(*args):
    out = io.StringIO()
    call_command("bench", "image", *args, stdout=out)
    return out.getvalue()


def test_it_prepares_the_pinned_image_once_and_then_finds_it(docker_provider, podman_socket):
    output = bench("prepare", "--host", podman_socket)
    assert f"docker: boxbench-standard:{read_pin()[7:23]} already present" in output
    assert f"rootfs {read_pin()}" in output


def test_it_shows_the_recipe_pin_cache_and_engine_copy(docker_provider, podman_socket):
    output = bench("show", "--host", podman_socket)
    assert f"pinned   {read_pin()}" in output
    assert "packages bash coreutils" in output
    assert f"docker   present on {podman_socket}" in output


def test_it_stops_with_the_reason_when_the_pin_is_malformed(tmp_path, monkeypatch):
    pin = tmp_path / "standard.sha256"
    pin.write_text("sha256:not-a-digest\n")
    monkeypatch.setattr(build, "PIN_PATH", pin)
    with pytest.raises(CommandError, match="standard.sha256: must hold one line sha256:"):
        bench("prepare", "--build-only")


def test_it_imports_a_rootfs_tagged_and_labelled_with_its_digest(docker_provider, tmp_path):
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "os-release").write_text("NAME=boxbench-test\n")
    tiny = recipe(name="boxbench-test-tiny", make_dirs=())
    digest = write_rootfs_tar(root, tmp_path / "tiny.tar", tiny)
    assert docker_provider.image_status(tiny, digest) is None
    image_id = docker_provider.import_image(tiny, tmp_path / "tiny.tar", digest)
    try:
        status = docker_provider.image_status(tiny, digest)
        assert status["id"] == image_id
        assert status["layers"] == [digest]  # the engine's layer is our tarball, byte for byte
        info = docker_provider.api.inspect_image(tiny.tag(digest))
        assert info["Config"]["WorkingDir"] == "/app"
    finally:
        docker_provider.api.remove_image(image_id, force=True)


def test_it_refuses_an_image_whose_tag_holds_another_rootfs(docker_provider, tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "marker").write_text("one\n")
    tiny = recipe(name="boxbench-test-retagged", make_dirs=())
    digest = write_rootfs_tar(root, tmp_path / "tiny.tar", tiny)
    other = "sha256:" + "f" * 64
    image_id = docker_provider.import_image(tiny, tmp_path / "tiny.tar", digest)
    docker_provider.api.tag(image_id, *tiny.tag(other).split(":"))
    try:
        with pytest.raises(build.ImageError, match="labelled rootfs .* not the pinned sha256:ff"):
            docker_provider.image_status(tiny, other)
    finally:
        docker_provider.api.remove_image(image_id, force=True)


def test_it_writes_a_new_pin_atomically(tmp_path):
    pin = tmp_path / "pin"
    write_pin("sha256:" + "a" * 64, pin)
    assert read_pin(pin) == "sha256:" + "a" * 64
    assert [p.name for p in tmp_path.iterdir()] == ["pin"]
    with pytest.raises(build.ImageError, match="not a sha256 digest"):
        write_pin("md5:abc", pin)
