"""`bench trace`: record an agent session as a trace unit, check units, or replay one here.

    bench trace record SESSION --archive REPO.tar.gz --slug NAME --title T --stratum S --source URL
    bench trace check [SLUG ...]
    bench trace replay SLUG [--on local|docker|host] [--unsafe-on-host]

`record` reads plain text (one command per line), a JSON array of commands or an agent trajectory
(docs/traces.md), replays it once on `local` to capture exit codes, durations and the patch digest,
replays it again to check it is deterministic, and writes runner/traces/<slug>/.

`--on host` runs the unit's commands on this machine, outside any sandbox, with the operator's
rights: refused unless `--unsafe-on-host` says so, and warned about even then.
"""

import os
import sys
from pathlib import Path

from django.core.management.base import CommandError

from runner.outcomes import Outcome
from runner.providers.base import ProviderError
from runner.traces import replay
from runner.traces.format import STRATA, TRACES_DIR, TraceError, load_all, load_trace
from runner.traces.record import SessionError, open_runner, read_session, record_trace

help = "Record an agent session as a trace unit, validate trace units, or replay one."
UNSAFE_HELP = "With --on host: run the unit's commands on this machine, unsandboxed."


def add_arguments(parser):
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    record = sub.add_parser("record", help="Turn a session into a trace unit.")
    record.add_argument("session", help="Session file: text, JSON array, or agent trajectory.")
    record.add_argument("--format", choices=["auto", "text", "json", "trajectory"], default="auto")
    record.add_argument("--archive", required=True, help="The repository as a .tar.gz archive.")
    record.add_argument("--strip-components", type=int, default=1)
    record.add_argument("--slug", required=True)
    record.add_argument("--title", required=True)
    record.add_argument("--stratum", choices=STRATA, required=True)
    record.add_argument("--source", required=True, help="Where the archive comes from (a URL).")
    record.add_argument("--description", default="")
    record.add_argument("--on", default="local", help="Provider slug to record on, or 'host'.")
    record.add_argument("--unsafe-on-host", action="store_true", help=UNSAFE_HELP)
    record.add_argument("--out", default=str(TRACES_DIR), help="Folder for the unit folder.")
    record.add_argument("--force", action="store_true", help="Replace an existing unit.")
    record.add_argument("--no-verify", action="store_true", help="Skip the second replay.")
    check = sub.add_parser("check", help="Validate trace units and their archives.")
    check.add_argument("slugs", nargs="*")
    again = sub.add_parser("replay", help="Replay one unit once and print its verdict.")
    again.add_argument("slug")
    again.add_argument("--on", default="local", help="Provider slug, or 'host'.")
    again.add_argument("--unsafe-on-host", action="store_true", help=UNSAFE_HELP)


def handle(options, out):
    if options.get("on") == "host":
        _host_allowed(options)
    try:
        {"record": _record, "check": _check, "replay": _replay}[options["action"]](options, out)
    except (TraceError, SessionError, ProviderError) as exc:
        raise CommandError(str(exc)) from None


def _host_allowed(options) -> None:
    """`--on host` only with its explicit flag, and a warning even then: the unit's commands
    (anyone's agent session) would run with the operator's rights and files."""
    if not options.get("unsafe_on_host"):
        raise CommandError(
            "--on host runs the unit's commands on this machine, outside any sandbox, with your "
            "rights and files; add --unsafe-on-host to do that, or use --on local"
        )
    print(
        "warning: --on host: the unit's commands run unsandboxed on this machine as "
        f"uid {os.geteuid()}",
        file=sys.stderr,
    )


def _record(options, out):
    path = Path(options["session"])
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"{path}: {exc.strerror}") from None
    commands = read_session(text, options["format"], source=str(path))
    trace = record_trace(
        commands,
        Path(options["archive"]),
        slug=options["slug"],
        title=options["title"],
        stratum=options["stratum"],
        source=options["source"],
        description=options["description"],
        strip_components=options["strip_components"],
        where=options["on"],
        out_root=Path(options["out"]),
        verify=not options["no_verify"],
        force=options["force"],
    )
    out.write(
        f"recorded {trace.slug}: {len(trace.commands)} commands, "
        f"{trace.recorded_ms / 1000:.1f} s of tool time, patch {trace.patch_sha256[:12]} "
        f"in {trace.folder}"
    )


def _check(options, out):
    slugs = options["slugs"]
    traces = [load_trace(TRACES_DIR / s / "trace.json") for s in slugs] if slugs else load_all()
    for trace in traces:
        out.write(
            f"{trace.slug}: ok ({trace.stratum}, {len(trace.commands)} commands, "
            f"{trace.recorded_ms / 1000:.1f} s recorded)"
        )


def _replay(options, out):
    trace = load_trace(TRACES_DIR / options["slug"] / "trace.json")
    runner = open_runner(options["on"])
    try:
        run = runner.run(trace, recording=False)
    finally:
        runner.close()
    try:
        records = run.parsed()
    except ValueError as exc:
        raise CommandError(f"{trace.slug} on {options['on']}: benchmark error: {exc}") from None
    verdict = replay.judge(trace, records)
    if verdict.outcome != Outcome.SUCCESS:
        raise CommandError(f"{trace.slug} on {options['on']}: {verdict.outcome}: {verdict.cause}")
    stages = ", ".join(f"{k} {v:.0f} ms" for k, v in verdict.stage_ms.items())
    where = options["on"]
    out.write(f"{trace.slug} on {where}: tool time {verdict.tool_time_ms:.0f} ms ({stages})")
