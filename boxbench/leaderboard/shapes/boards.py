"""The shapes of a benchmark's pages: the pieces several pages share, the unit page and the
benchmark page (the All view)."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from boxbench.leaderboard.shapes.burst import BurstCharts, DeclaredLimits
from boxbench.leaderboard.shapes.provider import ProviderInfo
from boxbench.leaderboard.shapes.rollouts import RolloutProjection

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


class AdjacentVerdict(TypedDict):
    """The compare verdict between two providers of adjacent ranks (leaderboard.verdicts)."""

    upper: str
    upper_name: str
    upper_rank: int
    lower: str
    lower_name: str
    lower_rank: int
    verdict: str  # stats.compare's: a, b, none, not_comparable
    same: bool  # no detectable difference: the lower rank is marked "≈"
    text: str


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
    verdicts: NotRequired[list[AdjacentVerdict]]  # NotRequired: pages materialized before
    held_back: NotRequired[list[WithheldRow]]  # the board's, each a row of the unit's tables


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
    cost_meaning: NotRequired[str]
    run: NotRequired[str]
    run_name: NotRequired[str]
    image_digest: NotRequired[str]


class UnitEntry(TypedDict):
    slug: str
    title: str
    trial_count: int


class ProbeRow(ProviderInfo):
    """One probe of a probe benchmark (Isolation) on one provider: the lower median of its
    readings over the successful trials and their range, or, with none, why (`missing`)."""

    benchmark: str
    probe: str
    title: str
    unit: str
    expected: str
    meaning: str
    n: int
    median: float | None
    min: float | None
    max: float | None
    missing: str


class WithheldRow(TypedDict):
    """A provider whose pair the audit held back: no numbers, no rank, the failing checks and
    the published run that lists them (leaderboard.withheld)."""

    provider: str
    provider_name: str
    label: str
    meaning: str
    checks: list[str]
    run: str
    run_name: str


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
    probes: NotRequired[list[ProbeRow]]  # a probe benchmark's readings (statistic "probe")
    # What a reader should read beside the numbers (leaderboard.caveats); NotRequired: pages
    # materialized before it existed still render.
    caveats: NotRequired[list[str]]
    held_back: NotRequired[list[WithheldRow]]
    verdicts: NotRequired[list[AdjacentVerdict]]  # a single-unit benchmark's
    workload_verdicts: NotRequired[list[AdjacentVerdict]]  # a multi-unit one's, whole workload
    burst: NotRequired[BurstCharts]  # the Burst board's curves and tier sweep
    rollouts: NotRequired[RolloutProjection]  # RL rollouts: what a million would take
    limits: NotRequired[list[DeclaredLimits]]  # Burst and Density: each provider's documented
