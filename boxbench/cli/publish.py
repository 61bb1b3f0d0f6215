"""`bench publish RUN`: publish a completed, audited run and materialize the dashboard."""

from django.core.management.base import CommandError

from boxbench import publishing
from boxbench.cli.common import get_run

help = "Publish a run whose audit has no unresolved failure, and rebuild the dashboard data."


def add_arguments(parser):
    parser.add_argument("run", help="Run id (UUID) or a unique run name.")


def handle(options, out):
    run = get_run(options["run"])
    try:
        publishing.publish(run)
    except publishing.PublishRefused as exc:
        raise CommandError(str(exc)) from None
    out.write(f"Published run {run.name} ({run.id}); dashboard aggregates rebuilt.")
