import os
import sys

from django.core.management.base import CommandError

from boxbench.cli.common import get_run
from boxbench.rawdata import FULL, PUBLIC, RawDataError, export_csv, iter_jsonl_bytes

help = (
    "Stream a run's raw data (JSON Lines or CSV) to a file or standard output: the public form "
    "(successful trials, the other attempts counted), or with --full every trial."
)


def add_arguments(parser):
    parser.add_argument("run", help="Run id (UUID) or a unique run name.")
    parser.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    parser.add_argument("-o", "--output", help="Write here instead of standard output.")
    parser.add_argument(
        "--full",
        action="store_true",
        help="Every trial with its outcome, owner, cause, replacement link and cost: private "
        "evidence, not for publication. Without it, the public form.",
    )


def _chunks(run, kind: str, form: str):
    if kind == "jsonl":
        return iter_jsonl_bytes(run, form)
    return (chunk.encode() for chunk in export_csv(run, form))


def handle(options, out):
    run = get_run(options["run"])
    chunks = _chunks(run, options["format"], FULL if options.get("full") else PUBLIC)
    target = options.get("output")
    try:
        if target:
            partial = f"{target}.partial"
            with open(partial, "wb") as handle:
                for chunk in chunks:
                    handle.write(chunk)
            # Renamed only when complete: an interrupted export leaves no half-written file.
            os.replace(partial, target)
        else:
            for chunk in chunks:
                sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
    except RawDataError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot write {target}: {exc.strerror}") from None
