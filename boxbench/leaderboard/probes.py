"""A probe benchmark's readings (Isolation): every probe on every provider, declared against
detected, for its own page, its CSV and the provider pages.

Not a speed board: a probe's readings are facts of the sandbox, so each row gives their lower
median over the provider's successful trials with their range, beside the answer a sandbox that
is what it was asked to be would give. A probe with no reading says why, from the reasons the
trials recorded (our own sentences, never the sandbox's raw answer).
"""

from __future__ import annotations

from boxbench.leaderboard import shapes
from boxbench.leaderboard.boards import Board
from boxbench.leaderboard.states import provider_info
from boxbench.models import Evidence, EvidenceKind, Outcome, Provider, Trial
from runner.benchmarks import code_definition
from stats.summary import PROBE, probe_reading

NO_READING = "no successful trial gave this reading"


def is_probe(board: Board) -> bool:
    return board.benchmark.statistic == PROBE


def probe_rows(board: Board, providers: dict[int, Provider]) -> list[shapes.ProbeRow]:
    """One row per probe and provider with trials on the board, in catalog then provider order."""
    benchmark = board.benchmark
    definition = code_definition(benchmark.slug)
    catalog = definition.readings if definition is not None else ()
    by_slug = {p.slug: p for p in providers.values()}
    sizes = {"cpus": benchmark.cpus, "memory_mib": benchmark.memory_mib}
    readings = {slug: _readings(board, by_slug[slug]) for slug in sorted(board.runs)}
    rows: list[shapes.ProbeRow] = []
    for probe in catalog:
        for slug, (metrics, missing) in readings.items():
            values = [m[probe.name] for m in metrics if _number(m.get(probe.name))]
            summary = probe_reading(values) if values else {"n": 0}
            why = sorted(missing.get(probe.name, ()))
            rows.append(
                {
                    **provider_info(by_slug[slug], benchmark.clock),
                    "benchmark": benchmark.slug,
                    "probe": probe.name,
                    "title": probe.title,
                    "unit": probe.unit,
                    "expected": probe.expected.format(**sizes),
                    "meaning": probe.meaning.format(**sizes),
                    "n": summary["n"],
                    "median": summary.get("median"),
                    "min": summary.get("min"),
                    "max": summary.get("max"),
                    "missing": "; ".join(why) if why else ("" if values else NO_READING),
                }
            )
    return rows


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _readings(board: Board, provider: Provider) -> tuple[list[dict], dict[str, set[str]]]:
    """The metrics of the provider's successful trials on the board's run, and per reading the
    reasons trials gave for lacking it."""
    trials = dict(
        Trial.objects.filter(
            run=board.runs[provider.slug],
            provider=provider,
            benchmark=board.benchmark,
            outcome=Outcome.SUCCESS,
        ).values_list("id", "metrics")
    )
    missing: dict[str, set[str]] = {}
    found = Evidence.objects.filter(trial_id__in=trials, kind=EvidenceKind.ISOLATION_PROBE)
    for data in found.values_list("data", flat=True):
        reasons = data.get("missing") if isinstance(data, dict) else None
        for name, why in (reasons or {}).items() if isinstance(reasons, dict) else ():
            missing.setdefault(str(name), set()).add(str(why)[:200])
    return list(trials.values()), missing
