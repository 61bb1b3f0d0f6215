"""`bench image prepare|show`: the pinned standard image, prepared before a run starts.

prepare builds (or takes from var/images/) the rootfs tarball whose digest is pinned in
runner/images/standard.sha256 and imports it into the container engine; show prints the recipe,
the pin, the cache and what the engine holds. See docs/images.md.
"""

from django.conf import settings
from django.core.management.base import CommandError

from runner.declarations import DeclarationError
from runner.images.build import ImageError, cache_path, load_recipe, read_pin
from runner.images.prepare import ensure_tarball, prepare_image
from runner.providers import get_provider
from runner.providers.base import ProviderError

help = "Prepare or show the pinned standard container image."

ENGINE_PROVIDERS = ("docker", "remote-docker")


def add_arguments(parser):
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    prepare = actions.add_parser("prepare", help="build the rootfs if needed and import it")
    prepare.add_argument(
        "--provider",
        choices=ENGINE_PROVIDERS,
        action="append",
        help="engine(s) to prepare (default: docker)",
    )
    prepare.add_argument("--host", help="engine address (overrides DOCKER_HOST and friends)")
    prepare.add_argument(
        "--rebuild", action="store_true", help="rebuild the rootfs even when it is cached"
    )
    prepare.add_argument(
        "--repin",
        action="store_true",
        help="accept a rebuilt rootfs with a new digest and write it to the pin file",
    )
    prepare.add_argument(
        "--build-only", action="store_true", help="only build and cache the rootfs tarball"
    )
    show = actions.add_parser("show", help="the recipe, the pin, the cache and the engine's copy")
    show.add_argument("--provider", choices=ENGINE_PROVIDERS, action="append")
    show.add_argument("--host", help="engine address (overrides DOCKER_HOST and friends)")


def handle(options, out):
    try:
        if options["action"] == "prepare":
            _prepare(options, out)
        else:
            _show(options, out)
    except (ImageError, ProviderError, DeclarationError) as exc:
        raise CommandError(str(exc)) from None


def cache_dir():
    return settings.VAR_DIR / "images"


def _providers(options):
    host = {"host": options["host"]} if options.get("host") else {}
    return [get_provider(slug, settings=host) for slug in options.get("provider") or ["docker"]]


def _prepare(options, out):
    def log(message):
        out.write(message)

    if options["build_only"]:
        path, digest, built = ensure_tarball(
            cache_dir(), rebuild=options["rebuild"], repin=options["repin"], log=log
        )
        out.write(f"rootfs {digest} {'built' if built else 'cached'} at {path}")
        return
    for provider in _providers(options):
        prepared = prepare_image(
            provider, cache_dir(), rebuild=options["rebuild"], repin=options["repin"], log=log
        )
        state = "imported" if prepared.imported else "already present"
        out.write(f"{provider.slug}: {prepared.tag} {state}, rootfs {prepared.digest}")
        if prepared.layers != [prepared.digest]:
            out.write(f"  note: the engine lists layers {prepared.layers} (label holds the pin)")


def _show(options, out):
    recipe, pin = load_recipe(), read_pin()
    out.write(f"recipe   {recipe.path}")
    out.write(f"debian   {recipe.suite} ({recipe.variant}) from {recipe.mirror}")
    out.write(f"packages {' '.join(recipe.packages)}")
    out.write(f"pinned   {pin}")
    out.write(f"tag      {recipe.tag(pin)}")
    tarball = cache_path(recipe, cache_dir(), pin)
    cached = f"{tarball} ({tarball.stat().st_size / 1024**2:.0f} MiB)" if tarball.exists() else "no"
    out.write(f"cached   {cached}")
    for provider in _providers(options):
        try:
            status = provider.image_status(recipe, pin)
            where = provider.base_url()
        except (ImageError, ProviderError) as exc:
            out.write(f"{provider.slug:<8} {exc}")
            continue
        if status is None:
            out.write(f"{provider.slug:<8} missing on {where}: run `manage.py bench image prepare`")
        else:
            out.write(f"{provider.slug:<8} present on {where} as {status['id']}")
