"""Named run plans: what `bench run --plan NAME` runs. The one place a plan is defined.

`default` is the README's run, sized to finish within 15 minutes on 2 cores with `local` and
`docker` taking turns on the same cores (every trial one at a time there), and to give every
score section a value for both providers: every sandbox operation, two machine benchmarks with a
short tool run (disk-seq, hard-links), and one short unit of each workload family beside
DeepSWE's two (a CI pipeline: about 1.5 s a trial; an RL task: about 3 s a trial), each with
the ranking floor's 20 trials per unit so every eligible provider is ranked. The other machine
benchmarks (the CPU pair, memory-bandwidth, the 4 KiB random disk pair) run 5 to 8 s of tool
time per trial, about 5 minutes each for two providers on such a machine: they are in `full`,
as are the isolation probes (the plan's 20 trials of their CPU burn and allocations would be
minutes) and the workloads' longer units (a CI pipeline of up to 95 s, an RL task that prepares
a C library for 9 to 40 s a trial).

`full` is every benchmark on every unit with each benchmark's own trials per unit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.benchmarks import all_benchmarks, ci_pipelines, deepswe, rl_rollouts


@dataclass(frozen=True)
class Plan:
    name: str
    description: str
    benchmarks: tuple[str, ...]
    units: dict[str, list[str]] = field(default_factory=dict)  # a subset of a benchmark's units
    trials: int | None = None  # per unit; None: each benchmark's N
    concurrency: int | None = None  # None: each benchmark's declared parallel trials


# The default plan's units of the workload benchmarks: short ones, named so that units added
# later are not swapped in and default runs stay comparable with earlier ones. DeepSWE's two
# (runner/traces/<unit>/trace.json, recorded_ms) take a few seconds each.
DEEPSWE_SHORTEST = ["six-ensure-bytearray", "toolz-dissoc-if"]
CI_SHORTEST = ["xxhash-ci"]
RL_SHORTEST = ["six-ensure-bytearray"]


# The machine benchmarks of the default plan: the shortest tool runs, one for the disk and one
# for the file system. cpu-single (7 s a trial) gave way to the CI and RL units.
DEFAULT_MACHINE = ("disk-seq", "hard-links")


def _default() -> Plan:
    modules = all_benchmarks()
    operations = [s for s, m in modules.items() if m.DEFINITION.section == "sandbox_operations"]
    return Plan(
        name="default",
        description=(
            "Every sandbox-operation benchmark, disk-seq and hard-links, and one short unit of "
            "each workload family: DeepSWE-style replay on two units, a CI pipeline and an RL "
            "rollout task (boxbench's own units, not the reference sets); 20 trials per unit, 2 "
            "in parallel where the job host's cores allow. `--plan full` runs every benchmark."
        ),
        benchmarks=(
            *operations,
            *DEFAULT_MACHINE,
            deepswe.SLUG,
            ci_pipelines.SLUG,
            rl_rollouts.SLUG,
        ),
        units={
            deepswe.SLUG: list(DEEPSWE_SHORTEST),
            ci_pipelines.SLUG: list(CI_SHORTEST),
            rl_rollouts.SLUG: list(RL_SHORTEST),
        },
        # Single-unit benchmarks rank at 20 successes; a workload's subset also gets 20 per unit,
        # at or above its share of the declared floor (18 of 20).
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
