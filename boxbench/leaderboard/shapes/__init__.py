"""The declared shape of every materialized page: what the leaderboard writes into an Aggregate
row and what the views and templates read back from it.

Pages are stored as JSON, so they stay dicts; each is described here by a TypedDict, and
materialize() checks every page against its shape before storing it (`check`): a missing,
mistyped or undeclared key fails at publication, and so in a test, never as a blank cell on a
page. Pure: no Django.
"""

from __future__ import annotations

import msgspec

from boxbench.leaderboard.shapes.boards import (
    AdjacentVerdict,
    BenchmarkContext,
    BenchmarkPage,
    CostRow,
    CostSegment,
    DerivedView,
    Distribution,
    JobHostSeries,
    OtherSeries,
    ProbeRow,
    ProviderInfo,
    PublicUnitPage,
    RunSource,
    Segment,
    Source,
    StageCosts,
    Status,
    SummaryRow,
    UnitEntry,
    UnitPage,
    UnitRow,
    UnitScope,
    WithheldRow,
)
from boxbench.leaderboard.shapes.readers import (
    BoardResults,
    CompareBenchmark,
    ComparePage,
    CompareRow,
    CompareSlice,
    CompareSummary,
    Composites,
    Headline,
    HeadlineRow,
    HeadlineRun,
    HeldBackBenchmark,
    HeldBackCheck,
    HeldBackPair,
    HistoryPage,
    HistoryPoint,
    HistorySlice,
    Lead,
    NotCombined,
    OverviewBenchmark,
    OverviewPage,
    ProgressCell,
    ProviderPage,
    ProviderResult,
    ProviderUnitResult,
    ReportedRegion,
    RerunLink,
    Resolution,
    ResultRow,
    RunPage,
    ScoreAndRank,
    ScoreNode,
    SectionNotes,
    SectionScore,
    Series,
    SeriesChange,
)

__all__ = [
    "SectionNotes",
    "HeldBackBenchmark",
    "AdjacentVerdict",
    "Lead",
    "Source",
    "RunSource",
    "UnitScope",
    "ProviderInfo",
    "Status",
    "JobHostSeries",
    "OtherSeries",
    "ProbeRow",
    "BenchmarkContext",
    "Segment",
    "CostSegment",
    "StageCosts",
    "Distribution",
    "DerivedView",
    "UnitRow",
    "CostRow",
    "PublicUnitPage",
    "UnitPage",
    "SummaryRow",
    "UnitEntry",
    "BenchmarkPage",
    "WithheldRow",
    "ScoreNode",
    "ResultRow",
    "BoardResults",
    "OverviewBenchmark",
    "Composites",
    "HeadlineRow",
    "HeadlineRun",
    "Headline",
    "NotCombined",
    "OverviewPage",
    "ProviderUnitResult",
    "ProviderResult",
    "ScoreAndRank",
    "SectionScore",
    "ReportedRegion",
    "ProviderPage",
    "CompareRow",
    "CompareSummary",
    "CompareBenchmark",
    "ComparePage",
    "CompareSlice",
    "HistoryPoint",
    "SeriesChange",
    "Series",
    "HistoryPage",
    "HistorySlice",
    "ProgressCell",
    "Resolution",
    "HeldBackCheck",
    "HeldBackPair",
    "RerunLink",
    "RunPage",
    "ShapeError",
    "check",
]


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
