"""Prepare the standard image on a container engine before a run: never inside a timed step.

The rootfs tarball is cached by digest (var/images/ by default), so it is built once per machine
and the pin decides which one is used. Used by `manage.py bench image prepare`, the tests and the
bench/ scripts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.images.build import (
    ImageError,
    build_rootfs,
    cache_path,
    file_digest,
    load_recipe,
    read_pin,
    write_pin,
)


@dataclass
class Prepared:
    tag: str
    digest: str
    tarball: Path | None
    built: bool  # the rootfs was built by debootstrap in this call
    imported: bool  # the image was imported into the engine in this call
    layers: list


def cached_tarball(cache_dir: str | Path, log=print) -> Path | None:
    """The cached tarball of the pinned digest, checked byte for byte; None when absent."""
    recipe, pin = load_recipe(), read_pin()
    path = cache_path(recipe, cache_dir, pin)
    if not path.exists():
        return None
    actual = file_digest(path)
    if actual != pin:
        # A tarball is renamed into place only when complete, so this is damage: rebuild it.
        log(f"{path}: digest {actual} is not its name; removing the damaged cache")
        path.unlink()
        return None
    return path


def ensure_tarball(cache_dir: str | Path, rebuild=False, repin=False, log=print):
    """The pinned rootfs tarball, built when missing. Returns (path, digest, built).

    A build whose digest differs from the pin (the Debian mirror moved on, or the recipe changed)
    is kept in the cache but refused unless `repin`, which writes the new digest to the pin file:
    a new digest starts a separate results series, so that is a deliberate step.
    """
    recipe, pin = load_recipe(), read_pin()
    if not rebuild:
        path = cached_tarball(cache_dir, log)
        if path is not None:
            return path, pin, False
    path, digest = build_rootfs(recipe, cache_dir, log)
    if digest != pin:
        if not repin:
            raise ImageError(
                f"the rebuilt rootfs has digest {digest}, not the pinned {pin} "
                f"(runner/images/standard.sha256): the Debian mirror or the recipe changed. "
                f"Run `manage.py bench image prepare --repin` to pin it; results with the new "
                f"digest form a separate series. The build is cached at {path}."
            )
        write_pin(digest)
        log(f"pinned {digest} in runner/images/standard.sha256 (was {pin})")
    return path, digest, True


def prepare_image(provider, cache_dir: str | Path, rebuild=False, repin=False, log=print):
    """Make the pinned standard image present on `provider`'s engine (a DockerProvider)."""
    recipe, pin = load_recipe(), read_pin()
    status = None if (rebuild or repin) else provider.image_status(recipe, pin)
    if status is not None:
        log(f"{recipe.tag(pin)} is already on {provider.base_url()}")
        return Prepared(recipe.tag(pin), pin, None, False, False, status["layers"])
    tarball, digest, built = ensure_tarball(cache_dir, rebuild=rebuild, repin=repin, log=log)
    status = provider.image_status(recipe, digest)
    imported = status is None
    if imported:
        log(
            f"importing {tarball.name} ({tarball.stat().st_size / 1024**2:.0f} MiB) as "
            f"{recipe.tag(digest)} on {provider.base_url()}"
        )
        provider.import_image(recipe, tarball, digest)
        status = provider.image_status(recipe, digest)
        if status is None:
            raise ImageError(f"{recipe.tag(digest)} is still missing after its import")
    return Prepared(recipe.tag(digest), digest, tarball, built, imported, status["layers"])
