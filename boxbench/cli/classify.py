"""`bench classify`: the DeepSWE stage of each shell command (runner/traces/classify.py).

Commands come on standard input, one per line, or with --json as a JSON array of command strings
(for commands that span lines, such as heredocs). The stage of each is written on standard output,
one per line, in the same order.
"""

import json
import sys

from django.core.management.base import CommandError

from runner.traces.classify import classify_all

help = "Print the DeepSWE stage (Read, Write, Install, Build, Test) of each command on stdin."


def add_arguments(parser):
    parser.add_argument(
        "--json",
        action="store_true",
        help="Read a JSON array of command strings instead of one command per line.",
    )
    parser.add_argument("--file", help="Read the commands from this file instead of stdin.")


def handle(options, out):
    text = _read(options.get("file"))
    if options.get("json"):
        try:
            commands = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--json: standard input is not valid JSON ({exc})") from None
        if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
            raise CommandError("--json: expected a JSON array of command strings")
    else:
        commands = text.splitlines()
    for stage in classify_all(commands):
        out.write(stage)


def _read(path):
    if not path:
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise CommandError(f"--file {path}: {exc.strerror}") from None
