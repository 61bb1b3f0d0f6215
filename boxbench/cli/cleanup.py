"""`bench cleanup`: remove leftover sandboxes by batch label, on every registered provider."""

from datetime import UTC, datetime, timedelta
from functools import partial

from django.conf import settings
from django.core.management.base import CommandError

from runner.declarations import load_all
from runner.providers import get_provider
from runner.providers.base import ProviderError

help = "Remove leftover boxbench sandboxes older than --max-age minutes (--dry-run lists them)."

OUR_LABELS = ("bb-", "boxbench-")


def add_arguments(parser):
    parser.add_argument(
        "--max-age",
        type=int,
        default=None,
        metavar="MINUTES",
        help="Only sandboxes at least this old (default: the sandbox lifetime, "
        "BOXBENCH_SANDBOX_LIFETIME_MINUTES, past which no trial can still use one).",
    )
    parser.add_argument("--dry-run", action="store_true", help="List, do not remove.")
    parser.add_argument("--provider", action="append", help="Only these providers (repeatable).")


def handle(options, out):
    max_age = options.get("max_age")
    if max_age is None:
        max_age = settings.SANDBOX_LIFETIME_MINUTES
    if max_age < 0:
        raise CommandError(f"--max-age must be 0 or more minutes, got {max_age}")
    cutoff = datetime.now(UTC) - timedelta(minutes=max_age)
    found = removed = errors = 0
    for slug, declaration in load_all().items():
        if options.get("provider") and slug not in options["provider"]:
            continue
        provider = get_provider(slug, declaration)
        problem = provider.configuration_problem()
        if problem:  # not configured here (no credentials, no SDK): nothing of ours to list
            out.write(f"skipped {slug}: {problem}")
            continue
        try:
            leftovers = _leftovers(provider)
        except ProviderError as exc:  # an unreachable or unconfigured provider: say so, go on
            out.write(f"skipped {slug}: {exc}")
            continue
        for sandbox, remove in leftovers:
            if not sandbox.label.startswith(OUR_LABELS):
                continue
            if sandbox.created_at is not None and sandbox.created_at > cutoff:
                continue
            found += 1
            age = _age(sandbox.created_at)
            if options.get("dry_run"):
                out.write(f"would remove {slug} {sandbox.id} label={sandbox.label} age={age}")
                continue
            try:
                remove(sandbox)
            except Exception as exc:  # noqa: BLE001 - report and go on with the others
                errors += 1
                out.write(f"FAILED {slug} {sandbox.id}: {exc}")
                continue
            removed += 1
            out.write(f"removed {slug} {sandbox.id} label={sandbox.label} age={age}")
    verb = "found" if options.get("dry_run") else "removed"
    out.write(f"{verb} {removed if not options.get('dry_run') else found} leftover sandbox(es)")
    if errors:
        raise CommandError(f"{errors} sandbox(es) could not be removed")


def _leftovers(provider) -> list:
    """(item, remove) pairs: live sandboxes, snapshot images where the provider keeps them
    (docker's commits carry the batch label too), and stray helper containers."""
    found = [(sandbox, provider.destroy) for sandbox in provider.list_sandboxes()]
    list_snapshots = getattr(provider, "list_snapshots", None)
    if list_snapshots is not None:
        found += [(image, partial(_delete_snapshot, provider)) for image in list_snapshots()]
    # Engine containers a provider's own server leaves behind (opensandbox's execd helpers).
    list_strays = getattr(provider, "list_strays", None)
    if list_strays is not None:
        found += [(stray, provider.remove_stray) for stray in list_strays()]
    return found


def _delete_snapshot(provider, image) -> None:
    provider.delete_snapshot(image.id)


def _age(created_at) -> str:
    if created_at is None:
        return "unknown"
    minutes = (datetime.now(UTC) - created_at).total_seconds() / 60
    return f"{minutes:.0f} min"
