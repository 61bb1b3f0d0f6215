"""The vocabulary of the results store: the choices its columns take and the run's allowed status
changes. Kept apart from the models so a reader finds the store's enumerated values in one place;
the words a trial, a chain and a benchmark definition store (Outcome, Owner, EvidenceKind,
ChainState, Section, Direction, Clock, MeasurementKind, ClockGate) are the runner's, in
runner/outcomes.py (pure, no Django), and boxbench.models exports them too."""

from django.db import models

from runner.outcomes import (  # noqa: F401 - the store's vocabulary, imported from here too
    Clock,
    ClockGate,
    Direction,
    MeasurementKind,
    Section,
)


class RunStatus(models.TextChoices):
    PLANNED = "planned", "Planned"
    RUNNING = "running", "Running"
    CANCELLING = "cancelling", "Cancelling"
    CANCELLED = "cancelled", "Cancelled"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"


RUN_TRANSITIONS = {
    RunStatus.PLANNED: {RunStatus.RUNNING, RunStatus.CANCELLED, RunStatus.FAILED},
    RunStatus.RUNNING: {RunStatus.COMPLETED, RunStatus.CANCELLING, RunStatus.FAILED},
    RunStatus.CANCELLING: {RunStatus.CANCELLED, RunStatus.FAILED},
    RunStatus.CANCELLED: set(),
    RunStatus.COMPLETED: set(),
    RunStatus.FAILED: set(),
}


class TrialState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    CANCELLED = "cancelled", "Cancelled"


class ResolutionKind(models.TextChoices):
    OUTLIERS_EXCLUDED = "outliers_excluded", "Outliers excluded by the objective rule"
    EXPLAINED = "explained", "Effect explained in the record"
    RERUN = "rerun", "Pair re-run"


class Scope(models.TextChoices):
    """Which page an Aggregate row holds; its key is the page's parts joined by "/"."""

    OVERVIEW = "overview", "Overview"  # no parts
    BENCHMARK = "benchmark", "Benchmark"  # benchmark slug
    UNIT = "unit", "Unit"  # benchmark slug, unit slug
    PROVIDER = "provider", "Provider"  # provider slug
    RUN = "run", "Run"  # run id: its progress and resolutions, frozen once published
    COMPARE = "compare", "Compare"  # provider slug a, provider slug b
    HISTORY = "history", "History"  # benchmark slug: its results series
    RELIABILITY = "reliability", "Reliability"  # no parts: failure rates per provider
