"""The shapes of the pages built over every board: the overview, the provider page, the
comparison of two providers, a benchmark's results series, and the run page."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from boxbench.leaderboard.shapes.boards import (
    JobHostSeries,
    ProbeRow,
    ProviderInfo,
    RunSource,
    Source,
    UnitScope,
)
from boxbench.leaderboard.shapes.reliability import ProviderFailures

# -- the overview -------------------------------------------------------------------------------


class ScoreNode(TypedDict):
    """A node of the score tree (stats.scores.ScoreNode.to_dict)."""

    key: str
    level: str
    label: str
    scores: dict[str, float]
    ranks: dict[str, int]
    children: list[ScoreNode]


class ResultRow(TypedDict):
    """One provider on a benchmark or unit, as scores.csv lists it (leaderboard.results)."""

    provider: str
    label: str | None
    ranked: bool
    n: int
    value: float | None  # the median, or on a multi-unit workload's own row its workload value
    ci_low: float | None
    ci_high: float | None
    run: str  # the run this provider's numbers come from ("" for a provider only refused)
    image_digest: str


class BoardResults(TypedDict):
    measure_unit: str
    lower_is_better: bool
    statistic: str  # of the benchmark's rows: "median" or "workload value"
    rows: list[ResultRow]
    units: dict[str, list[ResultRow]]  # unit slug: its rows (each a median)


class OverviewBenchmark(TypedDict):
    title: str
    run: str
    run_name: str
    image_digest: str
    sources: list[RunSource]
    unit_scope: UnitScope
    provider_runs: dict[str, Source]
    units: dict[str, str]  # unit slug: title
    results: NotRequired[BoardResults]  # absent from pages materialized before it
    held_back: NotRequired[list[str]]  # providers the audit held back here (no score, no rank)


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


class NotCombined(TypedDict):
    """A board the overview leaves out of its scores: timed from job hosts of another series."""

    benchmark: str
    title: str
    type: str
    region: str


class Lead(TypedDict):
    """The overview's opening (leaderboard.verdicts.lead)."""

    sentences: list[str]  # one per section, from its headline benchmark's verdicts
    held_back: str  # how many pairs the audit held back, and why; "" when none
    published_at: str
    trials: int
    job_host: str


class SectionNotes(TypedDict):
    """The score tree's words on unscored sections and the Overall (leaderboard.unscored)."""

    unscored: dict[str, str]  # section key: "not scored: why"
    overall: str  # how many sections the Overall averages


class HeldBackBenchmark(TypedDict):
    """A benchmark whose every published pair the audit held back: listed, never scored."""

    benchmark: str
    title: str
    providers: list[str]  # their names


class OverviewPage(TypedDict):
    tree: ScoreNode
    providers: dict[str, ProviderInfo]
    benchmarks: dict[str, OverviewBenchmark]
    composites: Composites
    headlines: list[Headline]
    job_host_series: JobHostSeries | None  # what the scores combine; None before any board
    not_combined: list[NotCombined]
    lead: NotRequired[Lead]
    all_held_back: NotRequired[list[HeldBackBenchmark]]
    section_notes: NotRequired[SectionNotes]
    # provider slug: its failure rates (leaderboard.reliability); absent before any was counted
    reliability: NotRequired[dict[str, ProviderFailures]]


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
    unit_scope: NotRequired[UnitScope]  # absent from pages materialized before it


class ScoreAndRank(TypedDict, total=False):
    score: float | None
    rank: int | None
    subset_note: str  # the benchmarks published over a subset of their units that feed it


class SectionScore(ScoreAndRank):
    label: str


class ReportedRegion(TypedDict):
    region: str  # as the provider's sandbox reported it (a trial's placement)
    trials: int  # successful trials of the published runs that reported it


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
    reported_regions: list[ReportedRegion]
    probes: NotRequired[list[ProbeRow]]  # what its sandboxes are (probe benchmarks' readings)
    reliability: NotRequired[ProviderFailures]  # its failure rates, where it has attempts


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
    caveats: list[str]  # said beside the verdict (another image, a region marker, a label)


class CompareSummary(TypedDict):
    counts: dict[str, int]
    text: str


class ComparePage(TypedDict):
    a: ProviderInfo
    b: ProviderInfo
    summary: CompareSummary
    rows: list[CompareRow]


class CompareBenchmark(TypedDict):
    """One benchmark both providers published: how many units they share, the verdicts over
    all its rows (main metric and stages), and how many of its units this answer shows."""

    benchmark: str
    benchmark_title: str
    units: int
    counts: dict[str, int]  # verdict: rows
    units_shown: int


class CompareSlice(TypedDict):
    """One address of a comparison: the whole comparison's summary and benchmarks, and the
    rows of the units this address shows (`benchmark` "" is the first address)."""

    a: ProviderInfo
    b: ProviderInfo
    summary: CompareSummary
    benchmarks: list[CompareBenchmark]
    benchmark: str
    page: int
    pages: int
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


class HistorySlice(HistoryPage):
    """A history as one address answers it (leaderboard.slices): each series with the points
    and changes of one unit, and every unit that has a point."""

    unit: str
    units: list[str]


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


class PairNames(TypedDict):
    """A pair's words on the run page (leaderboard.stored.pair_names)."""

    providers: dict[str, str]  # slug: name
    benchmarks: dict[str, str]  # slug: title


class RunPage(TypedDict):
    cells: list[ProgressCell]
    resolutions: list[Resolution]
    held_back: list[HeldBackPair]
    reruns: NotRequired[list[RerunLink]]  # absent from pages materialized before re-runs
    names: NotRequired[PairNames]  # absent from pages materialized before names
