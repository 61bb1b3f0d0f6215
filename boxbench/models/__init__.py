"""The results store: providers, benchmarks, units, runs, trials, measurements and evidence.

Durations are milliseconds (float) with their clock; costs are USD. Public identifiers are UUIDs.
Status changes of a run are rows (RunTransition), checked against RUN_TRANSITIONS. The models
live in one module per part of the store; everything is imported from here.
"""

from boxbench.choices import (  # noqa: F401 - the store's vocabulary, imported from here too
    RUN_TRANSITIONS,
    Clock,
    ClockGate,
    Direction,
    MeasurementKind,
    ResolutionKind,
    RunStatus,
    Scope,
    Section,
    TrialState,
)
from boxbench.models.aggregates import Aggregate, AggregateQuerySet, aggregate_key
from boxbench.models.catalog import Benchmark, Provider, Unit
from boxbench.models.history import PublishedPair, RunProgress, RunReliability
from boxbench.models.runs import (
    AuditResolution,
    ChainProgress,
    FinalResolution,
    InvalidTransition,
    Run,
    RunQuerySet,
    RunTransition,
)
from boxbench.models.trials import (
    Evidence,
    MeasurementName,
    Trial,
    TrialQuerySet,
    TrialTally,
    UnsuccessfulCount,
)
from runner.outcomes import (  # noqa: F401 - the runner's vocabulary, imported from here too
    ChainState,
    EvidenceKind,
    Outcome,
    Owner,
)

__all__ = [
    "Aggregate",
    "AggregateQuerySet",
    "AuditResolution",
    "FinalResolution",
    "Benchmark",
    "ChainProgress",
    "Evidence",
    "InvalidTransition",
    "MeasurementName",
    "Provider",
    "PublishedPair",
    "Run",
    "RunProgress",
    "RunReliability",
    "RunQuerySet",
    "RunTransition",
    "Trial",
    "TrialQuerySet",
    "TrialTally",
    "Unit",
    "UnsuccessfulCount",
    "aggregate_key",
]
