"""Named run plans: what `bench run --plan NAME` runs. The one place a plan is defined.

`default` is the README's run, sized to finish within 15 minutes on 2 cores with `local` and
`docker` taking turns on the same cores (every trial one at a time there): every sandbox
operation, DeepSWE-style replay on two short units, and the machine benchmarks whose tool time is
short or that a reader looks for first (cpu-single, disk-seq, hard-links), each with the ranking
floor's 20 trials per unit so every eligible provider is ranked. The other machine benchmarks
(cpu-all, memory-bandwidth, the 4 KiB random disk pair) run 5 to 8 s of tool time per trial, about
5 minutes each for two providers on such a machine: they are in `full`, as RL rollouts are (a
trial prepares a task and restores it four times: 9 to 40 s a trial on docker here), the
isolation probes are (the plan's 20 trials of their CPU burn and allocations would be minutes)
and CI Actions is (its pipelines run 5 s to 95 s per trial on such a machine). Their shortest
units were tried in this plan (2026-12-07): 560 trials ran 16.5 minutes, and the RL task saturated
a 2-core job host by itself, so its pairs, and docker's pairs that ran after it while the load
average was still high, failed the audit's host_saturated check.

`full` is every benchmark on every unit with each benchmark's own trials per unit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.benchmarks import all_benchmarks, burst, deepswe, density, file_transfer, output_stream
from runner.benchmarks.burst import DEFAULT_TIER
from runner.outcomes import Section


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


# The machine benchmarks of the default plan: short tool runs, and the CPU figure readers expect.
DEFAULT_MACHINE = ("cpu-single", "disk-seq", "hard-links")


def _default() -> Plan:
    modules = all_benchmarks()
    # Density fills the account (or the job host) to its cap: a capacity check, in `full`. Output
    # Stream writes 1 GiB a trial (with its untimed preparation, seconds a trial on local and
    # docker, minutes for the plan's 20 trials each): in `full`, as the 100 MiB transfers are.
    in_full_only = (density.DEFINITION.slug, output_stream.DEFINITION.slug)
    operations = [
        s
        for s, m in modules.items()
        if m.DEFINITION.section == Section.SANDBOX_OPERATIONS and s not in in_full_only
    ]
    small = [file_transfer.DEFAULT_UNIT]
    return Plan(
        name="default",
        description=(
            "Every sandbox-operation benchmark but Density and Output Stream (Burst on its "
            "8-tier, file transfers on 8 MiB), cpu-single, "
            "disk-seq and "
            "hard-links, and "
            "DeepSWE-style replay (boxbench's own units, not the reference set) on two short "
            "units; 20 trials per unit, 2 in parallel where the job host's cores allow. "
            "`--plan full` runs every benchmark."
        ),
        benchmarks=(*operations, *DEFAULT_MACHINE, deepswe.SLUG),
        # Burst on its scored tier only: the other tiers are charted, from `full` runs.
        units={
            deepswe.SLUG: list(DEEPSWE_SHORTEST),
            burst.DEFINITION.slug: [DEFAULT_TIER],
            file_transfer.UPLOAD.DEFINITION.slug: small,
            file_transfer.DOWNLOAD.DEFINITION.slug: small,
        },
        # Single-unit benchmarks rank at 20 successes; DeepSWE's subset also gets 20 per unit.
        trials=20,
        concurrency=2,
    )


def _full() -> Plan:
    return Plan(
        name="full",
        description=(
            "Every benchmark on every unit (DeepSWE-style replay on all of boxbench's own units), "
            "each with its own trials per unit and parallel trials."
        ),
        benchmarks=tuple(all_benchmarks()),
    )


PLANS = {"default": _default, "full": _full}


def get_plan(name: str) -> Plan:
    try:
        return PLANS[name]()
    except KeyError:
        raise KeyError(f"unknown plan {name!r}; known: {', '.join(PLANS)}") from None
