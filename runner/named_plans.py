"""Named run plans: what `bench run --plan NAME` runs. The one place a plan is defined.

`default` is the README's run: every sandbox-operation and machine-performance benchmark, and the
DeepSWE trace replay on two short units, with the ranking floor's number of trials per unit
(20) so every eligible provider gets ranked, two trials in parallel. A few minutes on 2 cores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.benchmarks import all_benchmarks, deepswe


@dataclass(frozen=True)
class Plan:
    name: str
    description: str
    benchmarks: tuple[str, ...]
    units: dict[str, list[str]] = field(default_factory=dict)  # a subset of a benchmark's units
    trials: int | None = None  # per unit; None: each benchmark's N
    concurrency: int | None = None  # None: each benchmark's declared parallel trials


# Two short DeepSWE units (runner/traces/<unit>/trace.json, recorded_ms): a few seconds each.
# Units added later are not swapped in, so default runs stay comparable with earlier ones.
DEEPSWE_SHORTEST = ["six-ensure-bytearray", "toolz-dissoc-if"]


def _default() -> Plan:
    modules = all_benchmarks()
    sections = ("sandbox_operations", "machine_performance")
    benchmarks = [s for s, m in modules.items() if m.DEFINITION.section in sections]
    return Plan(
        name="default",
        description=(
            "Every sandbox-operation and machine-performance benchmark, and DeepSWE-style replay "
            "(boxbench's own units, not the reference set) on two short "
            "units; 20 trials per unit, 2 in parallel."
        ),
        benchmarks=(*benchmarks, deepswe.SLUG),
        units={deepswe.SLUG: list(DEEPSWE_SHORTEST)},
        # Single-unit benchmarks rank at 20 successes; DeepSWE's subset also gets 20 per unit.
        trials=20,
        concurrency=2,
    )


PLANS = {"default": _default}


def get_plan(name: str) -> Plan:
    try:
        return PLANS[name]()
    except KeyError:
        raise KeyError(f"unknown plan {name!r}; known: {', '.join(PLANS)}") from None
