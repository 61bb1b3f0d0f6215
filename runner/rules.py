"""The common methodology's pure rules (no Django): eligibility refusals, rounds, shuffled
interleaved order, in-flight tracking and the top-up stop conditions.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from runner.benchmarks.base import BenchmarkDefinition, UnitDefinition
from runner.declarations import Declaration
from runner.tasks import images
from stats.labels import Label

ROUNDS = 4
TrialId = TypeVar("TrialId")

# What the admin, the CLI and the run page print after a refusal code: the status label the
# pages give the pair, in stats/labels.py's words.
REFUSAL_DISPLAY_LABELS = {
    "R401": Label.NOT_SUPPORTED,
    "R402": Label.NOT_OFFERED,
    "R403": Label.ACCOUNT_LIMIT,
    "R404": Label.NOT_SUPPORTED,  # a known fault the declaration records
}


@dataclass(frozen=True)
class Refusal:
    provider: str
    benchmark: str
    # R401 missing capability, R402 machine size not offered, R403 concurrency limit, R404 a known
    # fault recorded in the declaration (missing: its note)
    code: str
    missing: str
    message: str
    # A refusal of one unit only (a burst tier above the account's limit); "" for all of them.
    unit: str = ""

    @property
    def label(self) -> str:
        return REFUSAL_DISPLAY_LABELS[self.code]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parallel_trials(
    definition: BenchmarkDefinition, override: int | None, default: int, host_cap: int
) -> int:
    """Trials of `definition` run at once per provider: the run's override, else the benchmark's
    declaration, else the job host's default; never above the job host's cap. The same number
    applies to every provider ("Equal concurrency"). Interacting trials run one at a time: two
    bursts at once would be one larger burst."""
    if definition.interacting:
        return 1
    return max(1, min(override or definition.parallel_trials or default, host_cap))


def fit_host_cores(parallel: int, cpus: int, sandboxes_per_trial: int, host_cpus: int) -> int:
    """Parallel trials whose sandboxes' CPUs fit the job host's cores (at least 1), for
    providers whose sandboxes run on the job host itself."""
    return max(1, min(parallel, host_cpus // max(1, cpus * sandboxes_per_trial)))


def refusals(
    declaration: Declaration, definition: BenchmarkDefinition, concurrency: int
) -> list[Refusal]:
    """Why `declaration`'s provider cannot enter `definition`'s benchmark; [] when it can.

    `concurrency` is the benchmark's parallel trials; with its sandboxes per trial it must fit
    the provider's documented concurrent-sandbox limit.
    """
    found = []

    def refuse(code: str, missing: str, message: str) -> None:
        found.append(Refusal(declaration.provider, definition.slug, code, missing, message))

    fault = declaration.known_faults.get(definition.slug)
    if fault:
        refuse(
            "R404",
            fault,
            f"{declaration.provider}: a known fault holds {definition.slug} back: {fault}",
        )
    missing = [c for c in definition.required_capabilities if c not in declaration.capabilities]
    if missing:
        refuse(
            "R401",
            ", ".join(missing),
            f"{declaration.provider} does not declare {', '.join(missing)}, "
            f"which {definition.slug} requires",
        )
    if not declaration.offers(definition.cpus, definition.memory_mib):
        size = f"{definition.cpus} vCPU / {definition.memory_mib} MiB"
        refuse("R402", size, f"{declaration.provider} offers no {size} sandbox")
    limit = declaration.concurrent_sandboxes
    per_trial = definition.sandboxes_per_trial
    needed = concurrency * per_trial
    if limit is not None and needed > limit:
        refuse(
            "R403",
            f"{concurrency} parallel trials x {per_trial} sandboxes = {needed} > {limit}",
            f"{declaration.provider} allows {limit} concurrent sandboxes; {definition.slug} "
            f"needs {needed} ({concurrency} parallel trials x {per_trial} sandboxes per trial)",
        )
    return found


def unit_refusals(
    declaration: Declaration, definition: BenchmarkDefinition, units: Sequence[UnitDefinition]
) -> list[Refusal]:
    """The units `declaration`'s provider cannot run although it enters the benchmark: a unit
    whose definition needs more concurrent sandboxes than the account's documented limit (a
    burst tier) is refused as Account Limit, one whose declared size the provider does not offer
    as Not Offered, and one whose environment needs an image build this adapter does not make
    (a Terminal-Bench task's Dockerfile, `built_by`) as Not Supported, with the reason."""
    limit = declaration.concurrent_sandboxes
    found = []
    for unit in units:
        why = unit.definition.get("needs_image_build")
        if why and declaration.adapter not in unit.definition.get("built_by", ()):
            why = f"{why}, and {images.why_no_build(declaration.adapter)}"
            found.append(
                Refusal(
                    declaration.provider,
                    definition.slug,
                    "R401",
                    "image build",
                    f"{definition.slug} unit {unit.slug} on {declaration.provider}: {why}",
                    unit=unit.slug,
                )
            )
            continue
        cpus, memory = unit.definition.get("cpus"), unit.definition.get("memory_mib")
        if cpus and memory and not declaration.offers(cpus, memory):
            size = f"{cpus} vCPU / {memory} MiB"
            found.append(
                Refusal(
                    declaration.provider,
                    definition.slug,
                    "R402",
                    size,
                    f"{declaration.provider} offers no {size} sandbox, which {definition.slug} "
                    f"unit {unit.slug} declares",
                    unit=unit.slug,
                )
            )
            continue
        needed = unit.definition.get("sandboxes")
        if limit is not None and needed is not None and needed > limit:
            found.append(
                Refusal(
                    declaration.provider,
                    definition.slug,
                    "R403",
                    f"{needed} concurrent sandboxes > {limit}",
                    f"{declaration.provider} allows {limit} concurrent sandboxes; "
                    f"{definition.slug} unit {unit.slug} needs {needed}",
                    unit=unit.slug,
                )
            )
    return found


def split_rounds(trials: int, rounds: int = ROUNDS) -> list[int]:
    """Spread `trials` over `rounds` as evenly as possible, earlier rounds taking the remainder."""
    base, extra = divmod(trials, rounds)
    return [base + (1 if r < extra else 0) for r in range(rounds)]


def chain_order(
    benchmarks: list[str], rng: random.Random, rounds: int = ROUNDS
) -> list[tuple[str, int]]:
    """A provider's blocks [(benchmark, round)]: its benchmark order shuffled once per run, then
    round 1 of every benchmark, round 2 of every benchmark..., so each benchmark's trials come
    from separate moments across the run."""
    order = list(benchmarks)
    rng.shuffle(order)
    return [(slug, r) for r in range(1, rounds + 1) for slug in order]


def in_flight_means(
    held: dict[TrialId, list[tuple[float, float]]],
) -> dict[TrialId, float | None]:
    """Time-weighted mean number of *other* trials holding a sandbox over each trial's window.

    `held` maps a trial id to its [(start, end)] sandbox-holding spans (epoch seconds); a trial's
    window runs from its first start to its last end.
    """
    means: dict[TrialId, float | None] = {}
    for trial, spans in held.items():
        if not spans:
            means[trial] = None
            continue
        start, end = min(s for s, _ in spans), max(e for _, e in spans)
        if end <= start:
            means[trial] = 0.0
            continue
        overlap = 0.0
        for other, other_spans in held.items():
            if other == trial:
                continue
            for s, e in other_spans:
                overlap += max(0.0, min(e, end) - max(s, start))
        means[trial] = overlap / (end - start)
    return means


@dataclass(frozen=True)
class TrialSpan:
    """When a trial held its job host (epoch seconds), and which host and provider."""

    trial: str
    provider: str
    job_host: str
    start: float
    end: float


def cross_provider_overlaps(spans: list[TrialSpan]) -> dict[str, set[str]]:
    """{trial: other providers} for each trial that ran while a trial of another provider ran
    on the same job host: "each provider's chain runs on its own dedicated cloud job host, so one
    provider's workload cannot slow another provider's timings". Trials without a host are
    never compared (an imported run may not say where they ran)."""
    found: dict[str, set[str]] = {}
    by_host: dict[str, list[TrialSpan]] = {}
    for span in spans:
        if span.job_host:
            by_host.setdefault(span.job_host, []).append(span)
    for host_spans in by_host.values():
        host_spans.sort(key=lambda s: s.start)
        active: list[TrialSpan] = []
        for span in host_spans:
            active = [a for a in active if a.end > span.start]
            for other in active:
                if other.provider != span.provider:
                    found.setdefault(span.trial, set()).add(other.provider)
                    found.setdefault(other.trial, set()).add(span.provider)
            active.append(span)
    return found


def chain_overlaps(spans: list[TrialSpan]) -> dict[str, dict[str, int]]:
    """{provider: {other provider: trials of the first timed while the other ran on its job
    host}}; empty when every chain ran alone on its host."""
    provider_of = {span.trial: span.provider for span in spans}
    found: dict[str, dict[str, int]] = {}
    for trial, others in cross_provider_overlaps(spans).items():
        counts = found.setdefault(provider_of[trial], {})
        for other in others:
            counts[other] = counts.get(other, 0) + 1
    return {provider: dict(sorted(c.items())) for provider, c in sorted(found.items())}


@dataclass
class TopUpState:
    """What the top-up rounds of one provider have seen so far ("Top-Ups"; the spec calls the
    replacements refills and their clock the refill time limit)."""

    started_at: float  # the top-up clock's reading when the first round opened
    time_limit_s: float
    budget_usd: float | None = None
    rounds_without_gain: int = 0
    rounds: int = 0

    def after_round(self, gained: int) -> None:
        self.rounds += 1
        self.rounds_without_gain = 0 if gained > 0 else self.rounds_without_gain + 1


def top_up_stop(
    state: TopUpState,
    now: float,
    spent_usd: float,
    *,
    limit_reached: str | None,
    units_left: bool,
    unreplaceable: str | None,
    cancelled: bool,
) -> str | None:
    """Why the top-up rounds stop before the next round opens, or None to open it: the first of
    the stop conditions ("Stop Conditions") that holds for the whole provider.

    `limit_reached` is the time limit or budget a worker met mid-round (top_up_limit, checked
    before every top-up trial); `units_left` is whether any unit is still below its target with
    attempts to spare (top_ups_for_unit); `unreplaceable` names a failure that cannot be
    replaced or a trial whose outcome is unknown.
    """
    if limit_reached:
        return limit_reached
    if not units_left:
        return "every unit reached its target or its 2N attempts"
    if unreplaceable:
        return f"a failure cannot be replaced: {unreplaceable}"
    if state.rounds_without_gain >= 2:
        return "two refill rounds in a row added no successful trial"
    if limit := top_up_limit(state, now, spent_usd):
        return limit
    return "the run was cancelled" if cancelled else None


def top_up_limit(state: TopUpState, now: float, spent_usd: float) -> str | None:
    """The refill time limit or the run budget, checked before every top-up trial as well as when
    a round of top-ups opens; None while both hold."""
    if now - state.started_at > state.time_limit_s:
        return f"the refill time limit of {state.time_limit_s:g} s expired"
    if state.budget_usd is not None and spent_usd >= state.budget_usd:
        return f"the run budget of {state.budget_usd:g} USD is spent ({spent_usd:.4f} USD)"
    return None


def top_ups_for_unit(target: int, successes: int, attempts: int) -> int:
    """How many replacement trials a unit gets this round: its deficit, never beyond 2N attempts."""
    deficit = max(0, target - successes)
    return max(0, min(deficit, 2 * target - attempts))
