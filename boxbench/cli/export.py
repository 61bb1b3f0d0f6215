import contextlib
import os
import sys
import tempfile

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


def _write(target: str, chunks) -> None:
    """Write through a temporary file beside the target, renamed only when complete (an
    interrupted export leaves no half-written file). The temporary name is unpredictable and
    created exclusively, so a link planted in its place is never followed; the file is private
    (0600) whatever the umask, since the full form is private evidence."""
    folder = os.path.dirname(os.path.abspath(target))
    fd, partial = tempfile.mkstemp(prefix=".export-", suffix=".partial", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        raise


def handle(options, out):
    run = get_run(options["run"])
    chunks = _chunks(run, options["format"], FULL if options.get("full") else PUBLIC)
    target = options.get("output")
    try:
        if target:
            _write(target, chunks)
        else:
            for chunk in chunks:
                sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
    except RawDataError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot write {target}: {exc.strerror}") from None
