import sys

from django.core.management.base import CommandError

from boxbench.cli.terminal import printable
from boxbench.rawdata import RawDataError, import_jsonl

help = "Import a run from a raw-data JSON Lines file, all of it or nothing."


def add_arguments(parser):
    parser.add_argument("file", help="A .jsonl file written by `bench export`.")


def handle(options, out):
    try:
        result = import_jsonl(options["file"])
    except RawDataError as exc:
        raise CommandError(str(exc)) from None
    for warning in result.warnings:
        sys.stderr.write(printable(f"warning: {warning}") + "\n")
    counted = ""
    if result.counted:
        counted = f", {result.counted} unsuccessful attempts as counts"
    out.write(
        f"Imported run {result.run.id} ({result.run.name}), {result.form} form: "
        f"{result.trials} trials, {result.measurements} measurements{counted}."
    )
