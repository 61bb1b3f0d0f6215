"""What the replay adds per command, versus running the same commands directly.

Usage: .venv/bin/python bench/bench_replay.py [--commands 300] [--repeats 5] [--unit SLUG]

Runs in a temporary directory on this machine (runner/traces/record.py, HostDirectory), so only
the replay script's own work is measured: two guest clock readings, the spec's per-command limit
(`timeout --kill-after=5s LIMIT` around each command, inside its measured span), the record line,
and the exit-code check per command. Four timings of the same commands, interleaved run by run so
that all four see the same load:

- replay: the benchmark's replay script (runner/traces/replay.py), span from the first command's
  start reading to the last command's end reading;
- no limit: the same script without the per-command limit (`replay_script(limit=False)`), the
  same span: the difference is what the spec's `timeout` adds to the measured span;
- direct: a plain script running each command as `bash -c CMD` (what an agent's bash tool does);
- inline: the commands written straight into one script (no process per command at all).

It also times the whole replay (`HostDirectory.run`: preparation, key, sealer and proxy start,
commands, digest), beside the commands' span. It prints the median of `--repeats` runs of a
synthetic trace of `--commands` no-op commands (`:`) and of a real trace unit (--unit): the ms the
replay adds per command beside `bash -c` per command (the reference) from the same runs, and their
ratio, the ms the limit adds per command, with `uptime`'s load. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.traces import replay
from runner.traces.format import TRACES_DIR, Command, load_trace
from runner.traces.record import HOST_PATH, HostDirectory

TIMER = '__s=$EPOCHREALTIME\n{body}__e=$EPOCHREALTIME\necho "$__s $__e"\n'


def run_bash(directory: HostDirectory, script: str) -> str:
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=directory.workdir,
        env={"PATH": HOST_PATH, "HOME": str(directory.home), "LC_ALL": "C.UTF-8"},
        capture_output=True,
        check=True,
    )
    return result.stdout.decode()


def span_ms(text: str) -> float:
    start, end = (Decimal(v) for v in text.split()[-2:])
    return float((end - start) * 1000)


def measure(trace, repeats: int) -> dict[str, float]:
    quoted = [replay.bash_quote(c.command) for c in trace.commands]
    direct = "".join(f"bash -c {q} < /dev/null >> /dev/null 2>&1\n" for q in quoted)
    inline = "".join(f"{{ {c.command}\n}} < /dev/null >> /dev/null 2>&1\n" for c in trace.commands)
    timings: dict[str, list[float]] = {"replay": [], "no limit": [], "direct": [], "inline": []}
    whole: list[float] = []
    for _ in range(repeats):
        for name in timings:
            directory = HostDirectory()
            try:
                if name in ("replay", "no limit"):
                    started = time.perf_counter()
                    run = directory.run(trace, recording=False, limit=name == "replay")
                    if name == "replay":
                        whole.append((time.perf_counter() - started) * 1000)
                    records = run.parsed()
                    verdict = replay.judge(trace, records)
                    if verdict.outcome != "success":
                        raise SystemExit(f"replay of {trace.slug} failed: {verdict.cause}")
                    first, last = records.commands[0], records.commands[-1]
                    timings[name].append(_replay_span(run.records, first.index, last.index))
                else:
                    directory.prepare(trace)
                    body = direct if name == "direct" else inline
                    timings[name].append(span_ms(run_bash(directory, TIMER.format(body=body))))
            finally:
                directory.close()
    figures = {name: statistics.median(values) for name, values in timings.items()}
    return {**figures, "whole": statistics.median(whole)}


def _replay_span(records_text: str, first: int, last: int) -> float:
    starts, ends = {}, {}
    for line in records_text.splitlines():
        parts = line.split()
        if parts and parts[0] == "__CMD":
            starts[int(parts[1])], ends[int(parts[1])] = Decimal(parts[3]), Decimal(parts[4])
    return float((ends[last] - starts[first]) * 1000)


def report(label: str, trace, figures: dict[str, float]) -> None:
    k = len(trace.commands)
    print(f"{label}: {k} commands, median of runs, load {_load()}")
    for name, value in figures.items():
        if name == "whole":
            continue
        print(f"  {name:<8} {value:10.1f} ms  ({value / k:.3f} ms per command)")
    direct = figures["direct"] / k
    added = (figures["replay"] - figures["direct"]) / k
    added_inline = (figures["replay"] - figures["inline"]) / k
    print(
        f"  replay adds {added:.3f} ms per command over bash -c at {direct:.3f} ms per command "
        f"(replay / bash -c = {figures['replay'] / figures['direct']:.2f})"
    )
    print(f"  replay adds {added_inline:.3f} ms per command over inline commands")
    print(
        f"  the whole replay (preparation, sealer and proxy start, digest) {figures['whole']:.1f} "
        f"ms beside its commands' span {figures['replay']:.1f} ms"
    )
    limit = (figures["replay"] - figures["no limit"]) / k
    print(
        f"  the limit (timeout --kill-after=5s) adds {limit:.3f} ms per command to the measured "
        f"span over the same replay without it at {figures['no limit'] / k:.3f} ms per command"
    )


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--unit", default="six-ensure-bytearray")
    args = parser.parse_args()
    base = load_trace(TRACES_DIR / args.unit / "trace.json")
    synthetic = replace(
        base,
        slug="synthetic",
        commands=tuple(Command(":", 0, 0.0) for _ in range(args.commands)),
        patch_sha256=_clean_digest(base),
    )
    report("synthetic no-op trace", synthetic, measure(synthetic, args.repeats))
    report(f"unit {base.slug}", base, measure(base, args.repeats))


def _clean_digest(trace) -> str:
    """The patch digest of the untouched repository (no-op commands change nothing)."""
    directory = HostDirectory()
    try:
        run = directory.run(replace(trace, commands=(Command(":", 0, 0.0),)), recording=True)
        return run.parsed().digest
    finally:
        directory.close()


if __name__ == "__main__":
    main()
