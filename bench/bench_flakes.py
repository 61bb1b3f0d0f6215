"""How often each reliability, provider and browser test passes when run again and again under the
suite's normal parallelism.

    .venv/bin/python bench/bench_flakes.py [--repeat 10] [--workers 3] [--database-url URL]
        [--only reliability,providers,browser] [--keep DIR] [--all] [-- extra pytest arguments]

Each repetition is one pytest process over the chosen rooms, run as `./boxbench.sh test` runs
them (boxbench.sh, cmd_test): on SQLite with `-n WORKERS --dist loadgroup`; with
`--database-url`, on that PostgreSQL database, only the tests that use the database, as the
suite's second pass does (pytest-django creates and drops each worker's `test_` copy).
Every repetition writes a JUnit XML report; the table then gives each test's passes over the
repetitions that ran it, with the repetitions it failed in and the first line of its last
message: every test that failed at least once, or every test with `--all`; then the count of
tests that passed every time, and the tests skipped every time. Each repetition's wall time is
printed beside the first one's, the reference for how loaded the machine was meanwhile.

Exit status 0 only when every test that ran passed every time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROOMS = {
    "reliability": ["tests/reliability"],
    "providers": ["tests/providers"],
    "browser": sorted(
        str(path.relative_to(ROOT)) for path in (ROOT / "tests/web").glob("test_browser*.py")
    ),
}


@dataclass
class Tally:
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    last_message: str = ""
    failed_in: list[int] = field(default_factory=list)

    @property
    def ran(self) -> int:
        return self.passed + self.failed + self.errors


def read_report(path: Path, repetition: int, tallies: dict[str, Tally]) -> int:
    """Add one JUnit report to the tallies; the number of test cases it held."""
    cases = ET.parse(path).getroot().iter("testcase")
    count = 0
    for case in cases:
        count += 1
        name = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        tally = tallies[name]
        problem = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if problem is None:
            tally.passed += 1
            continue
        if problem.tag == "skipped":
            tally.skipped += 1
            continue
        if problem.tag == "failure":
            tally.failed += 1
        else:
            tally.errors += 1
        tally.failed_in.append(repetition)
        message = (problem.get("message") or problem.text or "").strip().splitlines()
        tally.last_message = message[0][:120] if message else ""
    return count


def pytest_command(paths: list[str], workers: int, report: Path, extra):
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *paths]
    command += [f"--junitxml={report}", "-o", "junit_family=xunit1", *extra]
    return command + ["-n", str(workers), "--dist", "loadgroup"]


def environment(database_url: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if database_url is None:
        env.pop("DATABASE_URL", None)
        env.pop("BOXBENCH_DATABASE_TESTS_ONLY", None)
    else:
        env.update(DATABASE_URL=database_url, BOXBENCH_DATABASE_TESTS_ONLY="1")
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--workers", type=int, default=3, help="xdist workers")
    parser.add_argument("--database-url", help="run the PostgreSQL pass on this database")
    parser.add_argument("--only", default="reliability,providers,browser")
    parser.add_argument("--keep", type=Path, help="keep each repetition's output here")
    parser.add_argument("--all", action="store_true", help="list the tests that always passed too")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    rooms = [r.strip() for r in args.only.split(",") if r.strip()]
    unknown = sorted(set(rooms) - set(ROOMS))
    if unknown or args.repeat < 1 or args.workers < 1:
        parser.error(f"--only takes {', '.join(ROOMS)}; --repeat and --workers at least 1")
    paths = [p for room in rooms for p in ROOMS[room]]
    keep = args.keep or Path(tempfile.mkdtemp(prefix="bench-flakes-"))
    keep.mkdir(parents=True, exist_ok=True)
    database = f"PostgreSQL ({args.database_url})" if args.database_url else "SQLite"
    where = f"{database}, -n {args.workers} --dist loadgroup"
    print(f"{args.repeat} repetition(s) of {', '.join(rooms)} on {where}; output in {keep}")

    tallies: dict[str, Tally] = defaultdict(Tally)
    walls = []
    for repetition in range(1, args.repeat + 1):
        report = keep / f"report-{repetition}.xml"
        command = pytest_command(paths, args.workers, report, args.extra)
        started = time.monotonic()
        with open(keep / f"output-{repetition}.txt", "wb") as out:
            status = subprocess.run(
                command,
                cwd=ROOT,
                env=environment(args.database_url),
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            ).returncode
        walls.append(time.monotonic() - started)
        if not report.exists():
            print(
                f"repetition {repetition}: pytest exited {status} without a report "
                f"(see {keep}/output-{repetition}.txt)"
            )
            return 2
        cases = read_report(report, repetition, tallies)
        bad = sum(repetition in t.failed_in for t in tallies.values())
        print(
            f"repetition {repetition}: {cases} tests, {bad} failed or errored, "
            f"{walls[-1]:.0f} s (first repetition {walls[0]:.0f} s)",
            flush=True,
        )

    print()
    print(f"{'pass rate':>9}  {'passed':>6}/{'ran':<4} test")
    flaky = 0
    by_rate = sorted(tallies.items(), key=lambda kv: (kv[1].passed / max(kv[1].ran, 1), kv[0]))
    for name, tally in by_rate:
        if not tally.ran:
            continue
        rate = 100.0 * tally.passed / tally.ran
        if tally.passed < tally.ran:
            flaky += 1
        elif not args.all:
            continue
        print(f"{rate:8.1f}%  {tally.passed:>6}/{tally.ran:<4} {name}")
        if tally.passed < tally.ran:
            print(f"{'':17} failed in repetition(s) {tally.failed_in}: {tally.last_message}")
    never = sorted(name for name, tally in tallies.items() if not tally.ran)
    ran = sum(1 for t in tallies.values() if t.ran)
    print()
    print(
        f"{ran} tests ran: {ran - flaky} passed every time, {flaky} did not; "
        f"{len(never)} skipped every time"
    )
    for name in never:
        print(f"  skipped: {name}")
    print(f"wall time per repetition: min {min(walls):.0f} s, max {max(walls):.0f} s")
    return 1 if flaky else 0


if __name__ == "__main__":
    sys.exit(main())
