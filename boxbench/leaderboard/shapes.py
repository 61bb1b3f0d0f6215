"""The declared shape of every materialized page: what the leaderboard writes into an Aggregate
row and what the views and templates read back from it.

Pages are stored as JSON, so they stay dicts; each is described here by a TypedDict, and
materialize() checks every page against its shape before storing it (`check`): a missing,
mistyped or undeclared key fails at publication, and so in a test, never as a blank cell on a
page. Pure: no Django.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

import msgspec

# -- pieces several pages share ---------------------------------------------------------------


class Source(TypedDict):
    """The run behind some numbers, and the image it ran on (sources.run_source)."""

    run: str
    run_name: str
    image_digest: str


class RunSource(Source):
    """One distinct run behind a page, with the names of the providers it feeds."""

    providers: list[str]


class UnitScope(TypedDict):
    """How much of the workload a page's numbers cover (sources.unit_scope)."""

    units: int
    of: int
    subset: bool
    text: str


class ProviderInfo(TypedDict):
    provider: str
    provider_name: str
    region_marker: str
    region_note: str
    colour_index: int  # boxbench.charts.provider_colour


class Status(TypedDict):
    """A provider's label on a view (stats.labels.Status.to_dict)."""

    label: str | None
    ranked: bool
    meaning: str


class JobHostSeries(TypedDict):
    """The job hosts every number of a board was timed from."""

    type: str
    region: str


class OtherSeries(TypedDict):
    """A published run of the benchmark left off the board: its job hosts are of another type
    or region."""

    provider: str
    run: str
    job_host_type: str | None
    job_host_region: str | None


class BenchmarkContext(TypedDict):
    """What the benchmark page and each of its unit pages repeat. The latest run's source keys
    (run, run_name, image_digest) name the run behind the page."""

    benchmark: str
    benchmark_title: str
    run: str
    run_name: str
    image_digest: str
    sources: list[RunSource]
    metric: str
    measure_unit: str
    lower_is_better: bool
    stages: list[str]
    cost_view: bool
    recorded_only: bool
    download_note: str
    unit_scope: UnitScope
    job_host_series: JobHostSeries
    other_series: list[OtherSeries]


# -- the unit page ------------------------------------------------------------------------------


class Segment(TypedDict):
    stage: str
    median: float
    width: float


class CostSegment(TypedDict):
    stage: str
    cost: float
    width: float


class StageCosts(TypedDict):
    total_cost: float  # the shown cost, which the segments fill exactly
    segments: list[CostSegment]


class Distribution(TypedDict):
    min: float
    p25: float
    p50: float
    p75: float
    max: float
    points: list[float]
    points_shown: int


class DerivedView(TypedDict):
    """One stage subset's summary; a subset none of the trials recorded also carries its
    label (Status)."""

    trials: int
    median: float | None
    tail: float | None
    tail_kind: str | None
    label: NotRequired[str | None]
    ranked: NotRequired[bool]
    meaning: NotRequired[str]


class UnitRow(ProviderInfo, Status):
    """One provider on one unit (stats.summary.summarize, labelled and ranked). The source keys
    are absent for a provider only refused."""

    outcomes: dict[str, int]
    unreplaced_failures: int
    n: int
    median: float | None
    ci_low: float | None
    ci_high: float | None
    tail: float | None
    tail_kind: str | None
    mean: float | None
    mean_cost_usd: float | None
    cost_ci_low: float | None  # the mean cost's 95 % bootstrap interval
    cost_ci_high: float | None
    stage_medians: dict[str, float | None]
    segments: list[Segment]
    scale: float | None
    distribution: Distribution | None
    derived: dict[str, DerivedView]
    rank: int | None
    run: NotRequired[str]
    run_name: NotRequired[str]
    image_digest: NotRequired[str]


class CostRow(ProviderInfo, Status):
    """One provider in a unit's Cost view; the cost only when the provider sources it."""

    n: int
    mean_cost_usd: float | None
    cost_ci_low: float | None
    cost_ci_high: float | None
    stage_costs: StageCosts | None
    rank: int | None
    run: NotRequired[str]
    run_name: NotRequired[str]
    image_digest: NotRequired[str]


class PublicUnitPage(BenchmarkContext):
    """A unit page as the API serves it: everything but the internal keys."""

    unit: str
    unit_title: str
    unit_digest: str
    trial_count: int
    derived_available: bool
    max_points: int
    ranking_floors: dict[str, int]
    rows: list[UnitRow]
    cost_rows: list[CostRow]


class UnitPage(PublicUnitPage):
    # Internal keys for the trials table's query (views.pages._trials_page); never in a URL.
    benchmark_id: int
    unit_id: int
    cells: list[tuple[str, int]]  # (run id, provider id)


# -- the benchmark page (the All view) ----------------------------------------------------------


class SummaryRow(ProviderInfo, Status):
    """One provider's workload value (or, on one unit, its median) and workload cost."""

    n: int
    ranking_floor: int | None
    workload_value: float | None
    substituted_units: list[str]
    notes: list[str]
    workload_cost_usd: float | None
    cost_substituted_units: list[str]
    cost_notes: list[str]
    rank: int | None
    stage_costs: NotRequired[dict[str, float] | None]  # a staged multi-unit workload's All view
    cost_rank: NotRequired[int | None]  # with a Cost view only
    cost_label: NotRequired[str | None]
    run: NotRequired[str]
    run_name: NotRequired[str]
    image_digest: NotRequired[str]


class UnitEntry(TypedDict):
    slug: str
    title: str
    trial_count: int


class BenchmarkPage(BenchmarkContext):
    title: str
    version: str
    description: str
    section: str
    section_label: str
    statistic: str
    clock: str
    cpus: int
    memory_mib: int
    trials_per_unit: int
    ranking_floor: int
    published_at: str
    multi_unit: bool
    units: list[UnitEntry]
    rows: list[SummaryRow]


# -- the overview -------------------------------------------------------------------------------


class ScoreNode(TypedDict):
    """A node of the score tree (stats.scores.ScoreNode.to_dict)."""

    key: str
    level: str
    label: str
    scores: dict[str, float]
    ranks: dict[str, int]
    children: list[ScoreNode]


class OverviewBenchmark(TypedDict):
    title: str
    run: str
    run_name: str
    image_digest: str
    sources: list[RunSource]
    unit_scope: UnitScope
    provider_runs: dict[str, Source]
    units: dict[str, str]  # unit slug: title


class Composites(TypedDict, total=False):
    """Per provider, the composite over the workloads (None: not every workload has a value)."""

    time: dict[str, float | None]
    cost: dict[str, float | None]


class HeadlineRow(ProviderInfo):
    """One provider on a section's headline benchmark: its median (one unit) or workload value
    (several), with the median's 95 % interval where it has one."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    ranked: bool
    label: str | None
    meaning: str


class HeadlineRun(TypedDict):
    """A run behind a headline chart: its schedule seed and the job hosts that timed it."""

    run: str
    run_name: str
    seed: int | None
    job_hosts: list[str]  # "name (type, region)", as the manifest records them


class Headline(TypedDict):
    """A section's headline benchmark on the overview (leaderboard.headlines)."""

    section: str
    section_label: str
    benchmark: str
    title: str
    value_kind: str  # "median" or "workload value"
    measure_unit: str
    lower_is_better: bool
    rows: list[HeadlineRow]
    runs: list[HeadlineRun]


class OverviewPage(TypedDict):
    tree: ScoreNode
    providers: dict[str, ProviderInfo]
    benchmarks: dict[str, OverviewBenchmark]
    composites: Composites
    headlines: list[Headline]


# -- the provider page --------------------------------------------------------------------------


class ProviderUnitResult(TypedDict):
    unit: str
    unit_title: str
    rank: int | None
    label: str | None
    meaning: str
    n: int
    median: float | None
    ci_low: float | None
    ci_high: float | None
    tail: float | None
    tail_kind: str | None
    mean: float | None


class ProviderResult(TypedDict):
    benchmark: str
    title: str
    measure_unit: str
    run: str
    run_name: str
    rank: int | None
    label: str | None
    meaning: str
    workload_value: float | None
    multi_unit: bool
    units: list[ProviderUnitResult]


class ScoreAndRank(TypedDict, total=False):
    score: float | None
    rank: int | None


class SectionScore(ScoreAndRank):
    label: str


class ProviderPage(ProviderInfo):
    region: str
    adapter: str
    declaration: dict | None
    declaration_digest: str
    pricing: dict | None
    pricing_digest: str
    overall: ScoreAndRank  # empty for a provider added since the last publication
    sections: list[SectionScore]
    results: list[ProviderResult]


# -- the comparison of two providers ----------------------------------------------------------


class CompareRow(TypedDict):
    """One benchmark, unit and series (the main metric, or one stage) both providers published
    (stats.compare.Comparison, with its verdict in words)."""

    benchmark: str
    benchmark_title: str
    unit: str
    unit_title: str
    stage: str  # "" for the benchmark's main metric
    measure_unit: str
    lower_is_better: bool
    n_a: int
    n_b: int
    median_a: float | None
    median_b: float | None
    ratio: float | None  # median_b / median_a
    ci_low: float | None
    ci_high: float | None
    detectable_percent: float | None
    verdict: str  # a, b, none, not_comparable
    reason: str
    text: str
    run_a: str
    run_b: str


class CompareSummary(TypedDict):
    counts: dict[str, int]
    text: str


class ComparePage(TypedDict):
    a: ProviderInfo
    b: ProviderInfo
    summary: CompareSummary
    rows: list[CompareRow]


# -- a benchmark's results series and their history -------------------------------------------


class HistoryPoint(TypedDict):
    """One published run of a series on one unit: its median and 95 % interval."""

    run: str
    run_name: str
    published_at: str
    unit: str
    n: int
    median: float | None
    ci_low: float | None
    ci_high: float | None


class SeriesChange(TypedDict):
    """The newest run of a series against the one before it, on one unit (stats.changes)."""

    unit: str
    earlier_run: str
    earlier_run_name: str
    later_run: str
    later_run_name: str
    n_earlier: int
    n_later: int
    median_earlier: float
    median_later: float
    percent: float | None
    p: float | None
    q: float | None
    flagged: bool
    direction: str
    text: str


class Series(TypedDict):
    """The published runs of one provider on one benchmark version with the same image digest,
    machine size (the benchmark's), job-host type and region."""

    provider: str
    provider_name: str
    colour_index: int
    image_digest: str
    job_host_type: str
    job_host_region: str
    points: list[HistoryPoint]
    changes: list[SeriesChange]


class HistoryPage(TypedDict):
    benchmark: str
    title: str
    measure_unit: str
    lower_is_better: bool
    series: list[Series]


# -- the run page -------------------------------------------------------------------------------


class ProgressCell(TypedDict, total=False):
    """One provider on one benchmark of a run (runner.runs.progress): its counts, or, for a
    pair the planner refused, the refusal."""

    provider: str
    benchmark: str
    target: int
    done: int
    failures: int
    queued: int
    running: int
    cancelled: int
    outcomes: dict[str, int]
    refusal: str
    missing: str | None


class Resolution(TypedDict):
    """How one failed check was resolved (boxbench.holdbacks.resolutions)."""

    provider: str
    benchmark: str
    check_name: str
    kind: str
    note: str
    rerun: str | None
    at: str


class HeldBackCheck(TypedDict):
    check: str
    why: str


class HeldBackPair(TypedDict):
    """A pair kept out of publication, and why (boxbench.holdbacks.held_back)."""

    provider: str
    benchmark: str
    checks: list[HeldBackCheck]


class RerunLink(TypedDict):
    """A re-run of one held-back pair and what its audit said (boxbench.holdbacks.rerun_links)."""

    run: str
    run_name: str
    provider: str
    benchmark: str
    outcome: str


class RunPage(TypedDict):
    cells: list[ProgressCell]
    resolutions: list[Resolution]
    held_back: list[HeldBackPair]
    reruns: NotRequired[list[RerunLink]]  # absent from pages materialized before re-runs


class ShapeError(ValueError):
    """A page does not match its declared shape; the message names the page and the key."""


def check(shape: type, data: dict, page: str) -> dict:
    """`data`, unchanged, once it matches `shape`: every required key present with a value of
    its declared type, and no key the shape does not declare."""
    try:
        declared = msgspec.convert(data, shape)
    except msgspec.ValidationError as exc:
        raise ShapeError(f"{page} does not match {shape.__name__}: {exc}") from None
    extra = _undeclared(data, declared, "$")
    if extra:
        raise ShapeError(f"{page} has keys {shape.__name__} does not declare: {', '.join(extra)}")
    return data


def _undeclared(data, declared, path: str) -> list[str]:
    """The paths of keys in `data` that its converted form (which keeps declared keys only)
    dropped."""
    if isinstance(data, dict) and isinstance(declared, dict):
        found = [f"{path}.{key}" for key in data if key not in declared]
        for key in declared:
            found += _undeclared(data[key], declared[key], f"{path}.{key}")
        return found
    if isinstance(data, list | tuple) and isinstance(declared, list | tuple):
        found = []
        for i, (item, kept) in enumerate(zip(data, declared, strict=True)):
            found += _undeclared(item, kept, f"{path}[{i}]")
        return found
    return []
