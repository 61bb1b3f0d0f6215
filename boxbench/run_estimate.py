"""What a run would take before it starts: its trials (the plan, less the pairs the planner
would refuse), its time and its cost, from the recent measured trials of each pair where there
are any, and said to be a guess where there are none.

The trials count follows runner.plan.plan_run's own rules (rules.parallel_trials and
rules.refusals over the same declarations and definitions). Time is the lower median wall time
of a pair's recent successful trials times its trials, divided by its parallel trials, summed
over every pair: providers sharing the job host take turns, so that is their time; providers on
hosts of their own run at once, so for them it is an upper bound. Cost is the mean recorded
cost of a pair's recent trials; a pair without any is left out of the sum and counted.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from django.conf import settings

from boxbench.models import Outcome, Trial
from runner import rules
from runner.benchmarks import all_benchmarks
from runner.declarations import load_all

RECENT_TRIALS = 5000  # the newest trials read to measure, over every pair asked for
GUESS_TRIAL_S = 10.0  # a trial's wall time when nothing of the provider was ever measured


@dataclass(frozen=True)
class PairEstimate:
    provider: str
    benchmark: str
    trials: int
    parallel: int
    trial_s: float
    measured: int  # recent successful trials behind trial_s; 0: a guess
    cost_usd: float | None  # the pair's whole cost; None: no cost recorded
    refused: str  # the planner's refusal code and label, or ""

    @property
    def seconds(self) -> float:
        return self.trials * self.trial_s / self.parallel

    @property
    def minutes(self) -> float:
        return self.seconds / 60


def estimate(
    benchmarks: list[str],
    providers: list[str],
    units: dict[str, list[str]] | None = None,
    trials: int | None = None,
    concurrency: int | None = None,
) -> dict:
    """{"pairs": [PairEstimate], "trials", "seconds", "minutes", "cost_usd", "unpriced": pairs
    without a recorded cost, "guessed": pairs never measured, ...}."""
    modules, declarations = all_benchmarks(), load_all()
    durations, costs = _recent(benchmarks, providers)
    pairs = []
    for provider in providers:
        measured_any = [d for (p, _), ds in durations.items() if p == provider for d in ds]
        fallback = statistics.median_low(measured_any) if measured_any else GUESS_TRIAL_S
        for slug in benchmarks:
            d = modules[slug].DEFINITION
            parallel = rules.parallel_trials(
                d, concurrency, settings.RUNNER_CONCURRENCY, settings.RUNNER_JOB_HOST_CAP
            )
            refused = rules.refusals(declarations[provider], d, parallel)
            count = len((units or {}).get(slug) or modules[slug].units()) or 1
            planned = 0 if refused else (trials or d.trials_per_unit) * count
            seen = durations.get((provider, slug), [])
            spent = costs.get((provider, slug), [])
            pairs.append(
                PairEstimate(
                    provider=provider,
                    benchmark=slug,
                    trials=planned,
                    parallel=parallel,
                    trial_s=statistics.median_low(seen) if seen else fallback,
                    measured=len(seen),
                    cost_usd=planned * statistics.fmean(spent) if spent else None,
                    refused=f"{refused[0].code} {refused[0].label}" if refused else "",
                )
            )
    planned_pairs = [p for p in pairs if p.trials]
    seconds = sum(p.seconds for p in planned_pairs)
    cost = sum(p.cost_usd for p in planned_pairs if p.cost_usd is not None)
    unpriced = sum(1 for p in planned_pairs if p.cost_usd is None)
    return {
        "pairs": pairs,
        "trials": sum(p.trials for p in planned_pairs),
        "seconds": seconds,
        "minutes": max(round(seconds / 60), 1) if seconds else 0,
        "cost_usd": cost,
        "cost_text": f"{cost:.2f}",
        "priced": unpriced < len(planned_pairs),
        "unpriced": unpriced,
        "guessed": sum(1 for p in planned_pairs if not p.measured),
        "guess_s": GUESS_TRIAL_S,
        "planned_pairs": len(planned_pairs),
    }


def _recent(benchmarks: list[str], providers: list[str]) -> tuple[dict, dict]:
    """{(provider, benchmark): [wall seconds]} of recent successful trials, and {pair: [cost]}
    of recent trials that recorded one."""
    rows = (
        Trial.objects.filter(
            provider__slug__in=providers,
            benchmark__slug__in=benchmarks,
            outcome=Outcome.SUCCESS,
            started_at__isnull=False,
            ended_at__isnull=False,
        )
        .order_by("-ended_at")
        .values_list("provider__slug", "benchmark__slug", "started_at", "ended_at", "cost_usd")[
            :RECENT_TRIALS
        ]
    )
    durations: dict = {}
    costs: dict = {}
    for provider, benchmark, started, ended, cost in rows:
        if started is None or ended is None:  # filtered out above; for the type checker
            continue
        durations.setdefault((provider, benchmark), []).append((ended - started).total_seconds())
        if cost is not None:
            costs.setdefault((provider, benchmark), []).append(cost)
    return durations, costs
