"""`python manage.py bench <subcommand>`: one entry point for every boxbench operation.

Each subcommand lives in its own module under boxbench/cli/ with `help`, `add_arguments(parser)`
and `handle(options, out)`; this file only lists them.
"""

import importlib

from django.core.management.base import BaseCommand, CommandError

from boxbench.cli import terminal

SUBCOMMANDS = {
    "export": "boxbench.cli.export",
    "import": "boxbench.cli.import_",
    "run": "boxbench.cli.run",
    "doctor": "boxbench.cli.doctor",
    "cleanup": "boxbench.cli.cleanup",
    "image": "boxbench.cli.image",
    "classify": "boxbench.cli.classify",
    "trace": "boxbench.cli.trace",
    "tasks": "boxbench.cli.tasks",
    "audit": "boxbench.cli.audit",
    "publish": "boxbench.cli.publish",
    "rerun": "boxbench.cli.rerun",
    "recover": "boxbench.cli.recover",
}


def _load(name):
    try:
        return importlib.import_module(SUBCOMMANDS[name])
    except ModuleNotFoundError as exc:
        if exc.name == SUBCOMMANDS[name]:
            return None
        raise


class Command(BaseCommand):
    help = "Run, inspect, export and publish sandbox benchmarks."

    def add_arguments(self, parser):
        subparsers = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
        for name in SUBCOMMANDS:
            module = _load(name)
            if module is None:
                continue
            sub = subparsers.add_parser(name, help=module.help, description=module.help)
            module.add_arguments(sub)

    def handle(self, *args, **options):
        module = _load(options["subcommand"])
        if module is None:
            raise CommandError(f"bench {options['subcommand']} is not installed")
        try:
            module.handle(options, terminal.Output(self.stdout))
        except CommandError as exc:
            raise terminal.printable_error(exc) from None
