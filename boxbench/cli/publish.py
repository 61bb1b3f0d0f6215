"""`bench publish RUN`: publish a completed run pair by pair and materialize the dashboard."""

from django.core.management.base import CommandError

from boxbench import publishing
from boxbench.cli.common import get_run
from boxbench.cli.run import write_held_back

help = (
    "Publish a run pair by pair (failing pairs stay out until resolved), or again once pairs "
    "were resolved since its publication; rebuild the dashboard."
)


def add_arguments(parser):
    parser.add_argument("run", help="Run id (UUID) or a unique run name.")


def handle(options, out):
    run = get_run(options["run"])
    try:
        publishing.publish(run)
    except publishing.PublishRefused as exc:
        raise CommandError(str(exc)) from None
    out.write(f"Published run {run.name} ({run.id}); dashboard aggregates rebuilt.")
    write_held_back(run, out)
