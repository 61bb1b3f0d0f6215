"""Plan a run (common methodology, "Independence"): eligibility refusals before anything starts, a
shuffled interleaved order per provider with the seed in the manifest, and one queued Trial per
planned attempt. The rules themselves are pure (runner/rules.py); this module applies them to the
requested names and writes the plan through runner/store.py.
"""

from __future__ import annotations

import platform
import random
import uuid
from collections import defaultdict

import django
from django.conf import settings

from boxbench.models import Run
from runner import adapters, provenance, rules, store
from runner.benchmarks import all_benchmarks
from runner.catalog import sync_catalog
from runner.declarations import BENCH_ONLY, DeclarationError, load_all
from runner.images.build import ImageError
from runner.labels import batch_label
from runner.manifest import (
    AdapterVersion,
    ChainPlan,
    CodeCommit,
    DemoRun,
    ImageIdentity,
    Manifest,
    Plan,
    PlannedBenchmark,
    ProviderEntry,
    Schedule,
)
from runner.providers import unavailable
from runner.providers.base import ProviderError
from stats import labels

SEQ_BLOCK = 1_000_000  # each provider's trials take their own seq range, so top-ups never collide


class PlanError(ValueError):
    """The requested plan cannot run (unknown names, nothing eligible, bad numbers)."""


def plan_run(
    name: str,
    *,
    benchmarks: list[str] | None = None,
    providers: list[str] | None = None,
    trials: int | None = None,
    concurrency: int | None = None,
    seed: int | None = None,
    job_hosts: dict[str, str] | None = None,
    budget_usd: float | None = None,
    refill_minutes: float = 10.0,
    units: dict[str, list[str]] | None = None,
    allow_busy_account: bool = False,
    actor=None,
) -> Run:
    """Create a planned Run with its manifest and queued trials; refusals are recorded, not run.

    `concurrency` overrides every benchmark's declared parallel trials for this run; `units`
    limits a benchmark to some of its units ({slug: [unit slugs]}); `allow_busy_account` lets a
    chain start although the account holds other live sandboxes (recorded in the manifest).
    """
    modules = all_benchmarks()
    declarations = load_all()
    benchmarks = list(dict.fromkeys(benchmarks or modules))
    named = bool(providers)  # unnamed: every declared provider that can run here
    offered = [slug for slug in declarations if slug not in BENCH_ONLY]
    providers = list(dict.fromkeys(providers or offered))
    unknown = [b for b in benchmarks if b not in modules]
    if unknown:
        raise PlanError(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(modules)}")
    unknown = [p for p in providers if p not in declarations]
    if unknown:
        known = ", ".join(declarations)
        raise PlanError(f"unknown provider(s) {', '.join(unknown)}; known: {known}")
    if problems := unavailable(providers):  # unconfigured, or its SDK not installed
        if named:
            raise PlanError(f"provider(s) cannot run here: {'; '.join(problems)}")
        providers = [p for p in providers if not any(x.startswith(f"{p}: ") for x in problems)]
    if concurrency is not None and not 1 <= concurrency <= 256:
        raise PlanError(f"concurrency must be between 1 and 256, got {concurrency}")
    units = units or {}
    for slug, wanted in units.items():
        if slug not in benchmarks:
            raise PlanError(f"units are given for {slug}, which the plan does not include")
        if not wanted:
            raise PlanError(f"no unit of {slug} is given")
        problems = [p for p in (unit_problem(modules[slug], u) for u in wanted) if p]
        if problems:
            raise PlanError("; ".join(problems))
    units = {slug: list(dict.fromkeys(wanted)) for slug, wanted in units.items()}
    parallel = {
        slug: rules.parallel_trials(
            modules[slug].DEFINITION,
            concurrency,
            settings.RUNNER_CONCURRENCY,
            settings.RUNNER_JOB_HOST_CAP,
        )
        for slug in benchmarks
    }
    job_hosts = job_hosts or {}
    schedule = _host_schedule(providers, declarations, job_hosts, modules, parallel)
    if trials is not None and not 1 <= trials <= 10_000:
        raise PlanError(f"trials per unit must be between 1 and 10000, got {trials}")
    if budget_usd is not None and budget_usd <= 0:
        raise PlanError(f"the run budget must be positive, got {budget_usd}")
    seed = seed if seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)

    planned_units = {
        slug: [u for u in modules[slug].units() if u.slug in units.get(slug, [u.slug])]
        for slug in benchmarks
    }
    refusals, eligible = [], defaultdict(list)
    refused_units: dict[tuple[str, str], set[str]] = {}
    for provider in providers:
        for slug in benchmarks:
            definition = modules[slug].DEFINITION
            found = rules.refusals(declarations[provider], definition, parallel[slug])
            if not found:
                found = rules.unit_refusals(declarations[provider], definition, planned_units[slug])
                refused_units[provider, slug] = {r.unit for r in found}
                if len(found) < len(planned_units[slug]):
                    eligible[provider].append(slug)
            refusals += found
    if not eligible:
        reasons = "; ".join(r.message for r in refusals)
        raise PlanError(f"no provider is eligible for any requested benchmark: {reasons}")

    try:
        provider_rows, benchmark_rows = sync_catalog(providers, benchmarks)
    except store.DefinitionConflict as exc:
        raise PlanError(f"planning a run: {exc}") from exc
    manifest = Manifest(
        seed=seed,
        plan=Plan(
            benchmarks=benchmarks,
            providers=providers,
            trials_per_unit=trials,
            concurrency=concurrency,
            job_host_cap=settings.RUNNER_JOB_HOST_CAP,
            allow_busy_account=allow_busy_account,
            budget_usd=budget_usd,
            refill_minutes=refill_minutes,
            rounds=rules.ROUNDS,
        ),
        refusals=refusals,
        versions=_versions(),
        code=CodeCommit(**provenance.code_commit()),
        audit_settings=_audit_settings(),
        # Per provider: the image every number of its chain ran on (Manifest.digest_for).
        images={provider: image_identity(provider) for provider in sorted(eligible)},
        schedule=schedule,
        demo=_bench_only(providers),
    )
    for slug in benchmarks:
        d = modules[slug].DEFINITION
        planned_slugs = units.get(slug) or [u.slug for u in modules[slug].units()]
        manifest.benchmarks[slug] = PlannedBenchmark(
            version=d.version,
            trials_per_unit=trials or d.trials_per_unit,
            ranking_floor=d.ranking_floor,
            run_floor=_run_floor(d, len(planned_slugs)),
            units=planned_slugs,
            parallel_trials=parallel[slug],
            declared_parallel_trials=d.parallel_trials,
            sandboxes_per_trial=d.sandboxes_per_trial,
        )
    # Chosen here rather than by the database: every trial's batch label carries it.
    run_id = uuid.uuid4()
    chains = []
    for index, provider in enumerate(sorted(eligible)):
        declaration = declarations[provider]
        order = rules.chain_order(sorted(eligible[provider]), rng)
        manifest.providers[provider] = ProviderEntry(
            declaration_digest=declaration.digest,
            pricing_digest=declaration.pricing_digest,
            job_host=job_hosts.get(provider, settings.JOB_HOST),
            job_host_type=settings.JOB_HOST_TYPE,
            job_host_region=settings.JOB_HOST_REGION,
            create_rate_per_s=declaration.create_rate_per_s,
            seq_base=index * SEQ_BLOCK,
        )
        manifest.adapters[provider] = AdapterVersion(
            **provenance.adapter_version(declaration.adapter)
        )
        manifest.chains[provider] = ChainPlan(order=list(order))
        blocks = _blocks(
            run_id, provider, manifest.benchmarks, benchmark_rows, order, refused_units
        )
        chains.append(store.PlannedChain(provider_rows[provider], index * SEQ_BLOCK, blocks))
    try:
        return store.create_run(run_id, name, manifest, actor, chains)
    except store.LabelsTaken as exc:
        raise PlanError(str(exc)) from None


def _bench_only(providers: list[str]) -> DemoRun | None:
    """A run on a provider that runs nothing measures the runner, never a provider: it is
    marked a demo run, which pages show and publishing refuses."""
    named = sorted(set(providers) & BENCH_ONLY)
    if not named:
        return None
    note = (
        "a run on the null adapter, which starts no sandbox and runs nothing: it measures "
        "the runner's own cost per trial, never a provider; it is never published"
    )
    return DemoRun(providers=named, note=note)


def _run_floor(definition, units: int) -> int | None:
    """The floor of a run over `units` units, for a workload that derives it per run: its share
    of the declared trials per unit times those units. Declared, never the run's own `--trials`,
    so a run of fewer trials is Not Ranked rather than ranked on them."""
    if not definition.floor_share:
        return None
    return labels.declared_floor(definition.trials_per_unit * units, definition.floor_share)


def unit_problem(benchmark, unit: str) -> str:
    """Why `unit` cannot be planned for `benchmark`, naming both; "" when it can.

    A benchmark may say more than "unknown" through `unit_problem(slug)` (a burst tier that is
    not a positive integer, say); a unit its units() lists is always accepted.
    """
    known = [u.slug for u in benchmark.units()]
    if unit in known:
        return ""
    slug = benchmark.DEFINITION.slug
    why = getattr(benchmark, "unit_problem", lambda _: "")(unit) or "no such unit"
    return f"unit {unit!r} of {slug}: {why} (known: {', '.join(known)})"


def _host_schedule(providers, declarations, job_hosts, modules, parallel) -> Schedule:
    """Lanes of the chains planned on each job host, which take turns so each is timed alone on
    its host, and, where sandboxes run on the job host itself, the parallel trials capped so
    their CPUs fit its cores (`parallel` is changed in place; equal for every provider)."""
    lanes: dict[str, list[str]] = {}
    for provider in sorted(providers):
        host = job_hosts.get(provider, settings.JOB_HOST)
        lanes.setdefault(f"host:{host}", []).append(provider)
    host_cpus = settings.RUNNER_JOB_HOST_CPUS
    capped = {}
    on_host = sorted(p for p in providers if declarations[p].shares_job_host)
    if on_host:
        for slug, asked in parallel.items():
            d = modules[slug].DEFINITION
            allowed = rules.fit_host_cores(asked, d.cpus, d.sandboxes_per_trial, host_cpus)
            if allowed != asked:
                capped[slug] = [asked, allowed]
                parallel[slug] = allowed
    names = "; ".join(f"{lane}: {', '.join(members)}" for lane, members in lanes.items())
    reason = (
        f"chains planned on one job host ({names}) take turns step by step, never at once, so "
        "each provider is timed alone on its host and drift reaches them alike; a provider "
        "given a dedicated host (--job-host) runs beside the others"
    )
    if on_host:
        reason += (
            f"; sandboxes of {', '.join(on_host)} run on the job host itself, so parallel trials "
            f"are capped so their sandboxes' CPUs fit its {host_cpus} core(s)"
        )
    return Schedule(lanes=lanes, host_cpus=host_cpus, capped=capped, reason=reason)


def _blocks(
    run_id,
    provider: str,
    planned: dict[str, PlannedBenchmark],
    benchmark_rows,
    order,
    refused_units: dict[tuple[str, str], set[str]],
) -> list:
    """The chain's (benchmark, round) blocks in order, each round taking its share of N, without
    the units refused to this provider."""
    per_round: dict[str, list[int]] = {}
    refused = {slug: units for (p, slug), units in refused_units.items() if p == provider}
    blocks = []
    for slug, round_no in order:
        per_round.setdefault(slug, rules.split_rounds(planned[slug].trials_per_unit))
        blocks.append(
            store.PlannedBlock(
                benchmark=benchmark_rows[slug],
                round=round_no,
                per_unit=per_round[slug][round_no - 1],
                units=[u for u in planned[slug].units if u not in refused.get(slug, ())],
                batch=batch_label(run_id, provider, slug, round_no),
            )
        )
    return blocks


def image_identity(provider: str) -> ImageIdentity:
    """What a provider's sandboxes run, as the manifest records it: reference and digest from
    the adapter's standard_image() (docker: the pinned standard image; local: the host toolchain,
    runner/providers/local/), or an error saying why it is unknown; never fatal to the plan,
    the chain's own create reports a missing image."""
    try:
        adapter = adapters.provider_factory(provider)
        standard_image = getattr(adapter, "standard_image", None)
        if standard_image is None:
            return ImageIdentity(error=f"the {provider} adapter names no standard image")
        reference, digest = standard_image()
    except (ProviderError, ImageError, DeclarationError, OSError) as exc:
        return ImageIdentity(error=f"{provider}: cannot identify its image: {exc}")
    return ImageIdentity(reference=reference, digest=digest)


def _audit_settings() -> dict:
    """The audit's thresholds, fixed before the run starts (methodology: "with thresholds fixed
    before the run"); boxbench.publishing.run_audit reads them back from the manifest."""
    from stats.audit import DEFAULT_SETTINGS  # numpy and pandas: loaded only when planning

    return DEFAULT_SETTINGS.to_dict()


def _versions() -> dict:
    return {
        "python": platform.python_version(),
        "django": django.get_version(),
        "platform": platform.platform(),
    }
