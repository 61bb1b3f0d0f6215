"""Helpers shared by the bench subcommands."""

import uuid

from django.core.management.base import CommandError

from boxbench.models import Run


def get_run(ref: str) -> Run:
    """A run by its UUID or by a name that matches exactly one run."""
    try:
        return Run.objects.get(id=uuid.UUID(ref))
    except ValueError:
        pass
    except Run.DoesNotExist:
        raise CommandError(f"no run has id {ref}") from None
    runs = list(Run.objects.filter(name=ref)[:2])
    if not runs:
        raise CommandError(f"no run has id or name {ref!r}")
    if len(runs) > 1:
        raise CommandError(f"several runs are named {ref!r}: give the run id")
    return runs[0]
