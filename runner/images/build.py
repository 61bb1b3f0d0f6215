"""Build the standard image's root file system from Debian packages, as a reproducible tarball.

No container registry is reachable from the job hosts, so the image is not pulled: debootstrap
installs the recipe's packages (standard.yaml) into a directory, and `write_rootfs_tar` packs that
directory so the same files always give the same bytes (sorted entries, numeric owners, mtimes
clamped to SOURCE_DATE_EPOCH). The tarball's SHA-256 is the image digest pinned in standard.sha256;
container engines record it as the image's only layer (its diff id). No Django imports here.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

IMAGES_DIR = Path(__file__).resolve().parent
RECIPE_PATH = IMAGES_DIR / "standard.yaml"
PIN_PATH = IMAGES_DIR / "standard.sha256"

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_RECIPE_KEYS = {
    "name",
    "suite",
    "variant",
    "mirror",
    "source_date_epoch",
    "packages",
    "empty_dirs",
    "drop",
    "make_dirs",
    "config",
}


class ImageError(Exception):
    """The recipe, the pin, the cache or the build is wrong; the message says which and where."""


@dataclass(frozen=True)
class Recipe:
    name: str
    suite: str
    variant: str
    mirror: str
    source_date_epoch: int
    packages: tuple[str, ...]
    empty_dirs: tuple[str, ...]
    drop: tuple[str, ...]
    make_dirs: tuple[str, ...]
    workdir: str
    env: dict
    path: str = ""

    def tag(self, digest: str) -> str:
        """The engine tag of the image built from the rootfs with `digest`."""
        return f"{self.name}:{digest.removeprefix('sha256:')[:16]}"


def load_recipe(path: str | Path | None = None) -> Recipe:
    path = Path(path or RECIPE_PATH)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ImageError(f"{path}: cannot read the image recipe: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ImageError(f"{path}: not valid YAML: {exc}") from None

    def fail(message):
        raise ImageError(f"{path}: {message}")

    if not isinstance(raw, dict):
        fail("the recipe is a mapping of fields")
    unknown = sorted(set(raw) - _RECIPE_KEYS)
    missing = sorted(_RECIPE_KEYS - {"make_dirs", "config"} - set(raw))
    if unknown or missing:
        fail(f"fields: unknown {unknown or 'none'}, missing {missing or 'none'}")
    for key in ("name", "suite", "variant", "mirror"):
        if not isinstance(raw[key], str) or not raw[key]:
            fail(f"{key} must be non-empty text, got {raw[key]!r}")
    if not re.match(r"^[a-z0-9][a-z0-9._-]*$", raw["name"]):
        fail(f"name must be a lowercase image name, got {raw['name']!r}")
    epoch = raw["source_date_epoch"]
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch <= 0:
        fail(f"source_date_epoch must be a positive whole number of seconds, got {epoch!r}")
    lists = {}
    for key in ("packages", "empty_dirs", "drop", "make_dirs"):
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            fail(f"{key} must be a list of names")
        if any(v.startswith("/") or ".." in v.split("/") for v in value if key != "packages"):
            fail(f"{key} entries are paths relative to the rootfs, without '..'")
        lists[key] = tuple(value)
    if not lists["packages"]:
        fail("packages must not be empty")
    config = raw.get("config") or {}
    if not isinstance(config, dict) or set(config) - {"workdir", "env"}:
        fail("config may only hold workdir and env")
    env = config.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        fail("config.env must map names to text")
    return Recipe(
        name=raw["name"],
        suite=raw["suite"],
        variant=raw["variant"],
        mirror=raw["mirror"],
        source_date_epoch=epoch,
        packages=lists["packages"],
        empty_dirs=lists["empty_dirs"],
        drop=lists["drop"],
        make_dirs=lists["make_dirs"],
        workdir=str(config.get("workdir") or "/"),
        env={str(k): v for k, v in env.items()},
        path=str(path),
    )


def read_pin(path: str | Path | None = None) -> str:
    """The pinned rootfs digest, "sha256:<hex>"; lines starting with # are comments."""
    path = Path(path or PIN_PATH)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ImageError(f"{path}: cannot read the pinned digest: {exc.strerror}") from None
    values = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    if len(values) != 1 or not _DIGEST.match(values[0]):
        raise ImageError(f"{path}: must hold one line sha256:<64 lowercase hex digits>")
    return values[0]


def write_pin(digest: str, path: str | Path | None = None) -> None:
    if not _DIGEST.match(digest):
        raise ImageError(f"not a sha256 digest: {digest!r}")
    text = (
        "# SHA-256 of the standard image's rootfs tarball (runner/images/standard.yaml).\n"
        "# A new value starts a separate results series; `bench image prepare --repin` writes it.\n"
        f"{digest}\n"
    )
    _write_atomically(Path(path or PIN_PATH), text.encode())


def cache_path(recipe: Recipe, cache_dir: str | Path, digest: str) -> Path:
    return Path(cache_dir) / f"{recipe.name}-rootfs-{digest.removeprefix('sha256:')}.tar"


def file_digest(path: str | Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            sha.update(chunk)
    return f"sha256:{sha.hexdigest()}"


def write_rootfs_tar(root: str | Path, dest: str | Path, recipe: Recipe) -> str:
    """Pack `root` into `dest` reproducibly and return the tarball's digest.

    The same files give the same bytes whatever order the file system lists them in, whoever owns
    the build and whenever it ran: names sorted, owners numeric without names, mtimes clamped to
    the recipe's SOURCE_DATE_EPOCH, GNU format (no PAX headers carrying atimes), hard links by
    first path. Device nodes, fifos and sockets are left out: the container runtime makes /dev.
    """
    root = Path(root)
    if not root.is_dir():
        raise ImageError(f"{root}: the rootfs directory does not exist")
    dest = Path(dest)
    tmp = dest.with_name(dest.name + ".partial")
    try:
        with (
            open(tmp, "wb") as raw,
            tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar,
        ):
            first_path_of_inode: dict[tuple[int, int], str] = {}
            for rel in _walk_sorted(root, recipe):
                _add_entry(tar, root, rel, recipe.source_date_epoch, first_path_of_inode)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return file_digest(dest)


DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")


def build_rootfs(recipe: Recipe, cache_dir: str | Path, log=print) -> tuple[Path, str]:
    """Debootstrap the recipe into a scratch directory and cache its tarball by digest.

    Returns (tarball path, digest). The scratch directory is removed whatever happens; a failed
    build leaves no tarball behind.
    """
    if shutil.which("debootstrap") is None:
        raise ImageError("debootstrap is not installed (apt-get install debootstrap)")
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="rootfs-build-", dir=cache_dir))
    try:
        target = scratch / "root"
        log(f"debootstrap {recipe.suite} ({len(recipe.packages)} packages) into {target}")
        _debootstrap(recipe, target)
        for rel in recipe.make_dirs:
            (target / rel).mkdir(parents=True, exist_ok=True)
        unnamed = scratch / "rootfs.tar"
        digest = write_rootfs_tar(target, unnamed, recipe)
        final = cache_path(recipe, cache_dir, digest)
        os.replace(unnamed, final)
        log(f"rootfs {digest} cached at {final}")
        return final, digest
    finally:
        _remove_scratch(scratch)


def _debootstrap(recipe: Recipe, target: Path) -> None:
    # The mirror is plain HTTP: every Release file must verify against Debian's archive keyring,
    # named explicitly, or debootstrap stops (never its fallback of no check when the keyring
    # is missing).
    if not DEBIAN_KEYRING.is_file():
        raise ImageError(
            f"{DEBIAN_KEYRING} is missing: the packages' signatures cannot be checked "
            "(apt-get install debian-archive-keyring)"
        )
    command = [
        "debootstrap",
        "--force-check-gpg",
        f"--keyring={DEBIAN_KEYRING}",
        f"--variant={recipe.variant}",
        f"--include={','.join(recipe.packages)}",
        recipe.suite,
        str(target),
        recipe.mirror,
    ]
    # Tools that honour SOURCE_DATE_EPOCH (shadow's last-change day, for one) write stable content.
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(recipe.source_date_epoch), "LC_ALL": "C"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        log_file = target / "debootstrap" / "debootstrap.log"
        detail = log_file.read_text(errors="replace") if log_file.exists() else done.stderr
        tail = "\n".join(detail.strip().splitlines()[-15:])
        raise ImageError(f"debootstrap exited with {done.returncode}:\n{tail}")


def _walk_sorted(root: Path, recipe: Recipe):
    """Relative paths under root, parents before children, names sorted, recipe filters applied."""
    empty = set(recipe.empty_dirs)

    def walk(rel: str):
        directory = root / rel if rel else root
        for name in sorted(os.listdir(directory)):
            child = f"{rel}/{name}" if rel else name
            if any(fnmatch.fnmatchcase(child, pattern) for pattern in recipe.drop):
                continue
            yield child
            if child not in empty and stat.S_ISDIR(os.lstat(root / child).st_mode):
                yield from walk(child)

    yield from walk("")


def _add_entry(tar, root: Path, rel: str, epoch: int, first_path_of_inode: dict) -> None:
    path = root / rel
    st = os.lstat(path)
    info = tarfile.TarInfo(rel)
    info.mode = stat.S_IMODE(st.st_mode)
    info.uid, info.gid = st.st_uid, st.st_gid
    info.uname = info.gname = ""
    info.mtime = min(int(st.st_mtime), epoch)
    if stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    elif stat.S_ISLNK(st.st_mode):
        info.type = tarfile.SYMTYPE
        info.linkname = os.readlink(path)
        tar.addfile(info)
    elif stat.S_ISREG(st.st_mode):
        key = (st.st_dev, st.st_ino)
        if st.st_nlink > 1 and key in first_path_of_inode:
            info.type = tarfile.LNKTYPE
            info.linkname = first_path_of_inode[key]
            tar.addfile(info)
            return
        first_path_of_inode[key] = rel
        info.size = st.st_size
        with open(path, "rb") as f:
            tar.addfile(info, f)
    # Device nodes, fifos and sockets are skipped on purpose (see write_rootfs_tar).


def _remove_scratch(scratch: Path) -> None:
    # debootstrap mounts /proc and /sys inside its target; never let rmtree walk into them.
    for mount_point in sorted(_mounts_below(scratch), reverse=True):
        subprocess.run(["umount", "-l", mount_point], capture_output=True, check=False)
    if _mounts_below(scratch):
        raise ImageError(
            f"{scratch}: file systems are still mounted below it; unmount, then delete"
        )
    shutil.rmtree(scratch, ignore_errors=True)


def _mounts_below(directory: Path) -> list[str]:
    prefix = str(directory.resolve()) + "/"
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    points = [line.split()[1].replace("\\040", " ") for line in lines if len(line.split()) > 1]
    return [p for p in points if p.startswith(prefix)]


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".partial")
    tmp.write_bytes(data)
    os.replace(tmp, path)
