"""The raw-data format as typed msgspec structs: one line of a file decodes into one of them.

Decoding checks every field's type, integer ranges, string lengths, enums and slug syntax. String
lengths and integer ranges are read from the Django models, so the format cannot drift from the
columns it is stored in. The descriptions are the reference tables of docs/raw-data.md (see
boxbench/rawdata/docs.py). Checks that span fields or lines are in boxbench/rawdata/checks.py.
"""

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from boxbench.models import (
    Benchmark,
    Clock,
    ClockGate,
    Direction,
    Outcome,
    Owner,
    Provider,
    Run,
    RunStatus,
    Section,
    Trial,
    Unit,
    UnsuccessfulCount,
)
from boxbench.models import MeasurementName as StoredName
from runner.outcomes import MAX_VALUE, RequestOutcome
from stats import reliability as rel

SCHEMA_VERSION = 6
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6)
# The two forms of a file (docs/raw-data.md): `public` holds the successful trials and counts the
# others; `full`, for those who may see private evidence, holds every trial.
PUBLIC, FULL = "public", "full"
FORMS = (PUBLIC, FULL)
UNSUCCESSFUL = tuple(o.value for o in Outcome if o != Outcome.SUCCESS)
# Whose a failed attempt is: any owner but a success's.
FAILURE_OWNERS = tuple(o.value for o in Owner if o != Owner.NONE)

# Longest line accepted, in bytes: the header holds every definition, a trial line only one trial.
MAX_HEADER_BYTES = 16 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024

# Django's slug rule (django.core.validators.slug_re), which the URLs' <slug:> converter also uses.
SLUG_PATTERN = r"^[-a-zA-Z0-9_]+\Z"
VERSION_PATTERN = r"^[-a-zA-Z0-9_.+]+\Z"
SHA256_PATTERN = r"^[0-9a-f]{64}\Z"


def _column(model, name: str):
    return model._meta.get_field(name)


# The longest free text (a TextField: a trial's cause, a description, a region note), in
# characters: the runner keeps a cause to this length too (runner/store.py).
MAX_FREE_TEXT = 4000
# A run is imported once it has ended: a run still going (or planned) here would be one no
# chain carries on.
ENDED_STATUSES = (RunStatus.COMPLETED, RunStatus.CANCELLED, RunStatus.FAILED)


def text(model, name: str, description: str, *, pattern: str | None = None):
    """A string no longer than its column, or than MAX_FREE_TEXT for a TextField."""
    length = _column(model, name).max_length or MAX_FREE_TEXT
    return Annotated[str, msgspec.Meta(max_length=length, pattern=pattern, description=description)]


def slug(model, name: str, description: str):
    return text(model, name, description, pattern=SLUG_PATTERN)


def integer(model, name: str, description: str, *, minimum: int | None = None):
    """An integer within its column's range, and at least `minimum`."""
    # Imported here: imported before django.db.models, this module would be half-initialized.
    from django.db.backends.base.operations import BaseDatabaseOperations

    ranges = BaseDatabaseOperations.integer_field_ranges
    low, high = ranges[_column(model, name).get_internal_type()]
    low = low if minimum is None else max(low, minimum)
    return Annotated[int, msgspec.Meta(ge=low, le=high, description=description)]


def choice(values, description: str):
    return Annotated[Literal[tuple(values)], msgspec.Meta(description=description)]


def described(kind, description: str):
    return Annotated[kind, msgspec.Meta(description=description)]


# Every number a statistic reads is bounded, so no sum, mean or variance of them can overflow.
NonNegative = Annotated[float, msgspec.Meta(ge=0, le=MAX_VALUE)]
Moment = Annotated[datetime, msgspec.Meta(tz=True)]
Object = dict[str, Any]
MeasurementName = Annotated[str, msgspec.Meta(max_length=_column(StoredName, "name").max_length)]


class Struct(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, gc=False):
    pass


class RunInfo(Struct):
    """`run` in the header."""

    id: described(uuid.UUID, "The run's id.")
    name: text(Run, "name", "The run's name.")
    status: choice(
        [s.value for s in ENDED_STATUSES], "The run's status when it was exported: it has ended."
    )
    created_at: described(Moment | None, "When the run was planned (null: the import's time).")
    started_at: described(Moment | None, "When the run started.")
    ended_at: described(Moment | None, "When the run ended; not before `started_at`.")


class UnitEntry(Struct):
    """`benchmarks[].units[]` in the header."""

    slug: slug(Unit, "slug", "Unique within the benchmark.")
    title: text(Unit, "title", "")
    definition: described(Object, "What the unit runs (for a trace: its archive and digests).")
    digest: text(Unit, "digest", "Digest of the definition.")


class MeasurementDecl(Struct):
    """The unit and clock of one measurement name."""

    unit: text(StoredName, "unit", "Unit of the values, for example `ms`.")
    clock: choice(Clock.values(), "The clock that timed it.")


class MeasurementDecls(Struct):
    """`benchmarks[].measurements` in the header."""

    metrics: described(dict[MeasurementName, MeasurementDecl], "Metric name → unit and clock.")
    stages: described(dict[MeasurementName, MeasurementDecl], "Stage name → unit and clock.")


class BenchmarkEntry(Struct):
    """`benchmarks[]` in the header: every benchmark the run's trials use."""

    slug: slug(Benchmark, "slug", "With `version`, unique in the header.")
    version: text(
        Benchmark, "version", "A changed definition has a new version.", pattern=VERSION_PATTERN
    )
    title: text(Benchmark, "title", "")
    description: text(Benchmark, "description", "")
    section: choice(Section.values(), "Where the benchmark is shown.")
    metric: text(Benchmark, "metric", "Name of the main measurement.")
    unit: text(Benchmark, "unit", "Unit of the main measurement.")
    direction: choice(Direction.values(), "Which way is better.")
    statistic: text(Benchmark, "statistic", "The statistic ranked, for example `median`.")
    clock: choice(Clock.values(), "The clock of the main measurement.")
    cpus: integer(Benchmark, "cpus", "vCPUs of the sandbox.")
    memory_mib: integer(Benchmark, "memory_mib", "Memory of the sandbox.")
    trials_per_unit: integer(Benchmark, "trials_per_unit", "Trials planned per unit.", minimum=1)
    ranking_floor: integer(Benchmark, "ranking_floor", "Successful trials needed to be ranked.")
    required_capabilities: described(list[str], "Capabilities a provider must declare.")
    stage_names: described(list[str], "Stages of a staged benchmark, in order.")
    charted: described(bool, "Whether the benchmark is charted.")
    steps_include_create_or_build: described(bool, "Whether the timed steps include create.")
    units: described(list[UnitEntry], "The units the run's trials use.")
    measurements: described(MeasurementDecls, "Unit and clock of every measurement name.")


class ProviderEntry(Struct):
    """`providers[]` in the header: every provider the run uses."""

    slug: slug(Provider, "slug", "Unique in the header.")
    name: text(Provider, "name", "")
    adapter: text(Provider, "adapter", "Adapter module in runner/providers/.")
    region: text(Provider, "region", "")
    region_marker: text(Provider, "region_marker", "Shown beside results timed across an ocean.")
    region_note: text(Provider, "region_note", "")
    declaration: described(Object, "The provider's declaration.")
    declaration_digest: text(Provider, "declaration_digest", "Digest of the declaration.")
    pricing: described(Object, "The provider's pricing.")
    pricing_digest: text(Provider, "pricing_digest", "Digest of the pricing.")


class Header(Struct, tag_field="type", tag="run"):
    """Line 1: the run header (`"type": "run"`)."""

    schema_version: described(int, "`6` (`1` to `5` are still read; see below).")
    run: described(RunInfo, "The run.")
    manifest: described(Object, "What makes the run reproducible (seed, plan, digests, …).")
    audit_report: described(Object | None, "The audit as exported, or null; kept for comparison.")
    benchmarks: described(list[BenchmarkEntry], "Every benchmark the trial and counts lines use.")
    providers: described(
        list[ProviderEntry], "Every provider the trial, counts and reliability lines use."
    )
    form: described(
        Literal[FORMS],
        "`public`: the successful trials, the others as counts lines; `full`: every trial. "
        "Absent (versions 1 and 2): `full`.",
    ) = FULL


class ClockGates(Struct):
    """`clock_gates` of a trial line."""

    metrics: described(dict[str, Literal["pass", "fail"]], "Metric name → gate.") = {}
    stages: described(dict[str, Literal["pass", "fail"]], "Stage name → gate.") = {}


Values = dict[MeasurementName, NonNegative | None]


class RequestLine(Struct):
    """`requests[]` of a burst's trial line (version 4): one create request, in submission
    order, its times in ms from the burst's start on the job host's monotonic clock."""

    planned_ms: described(NonNegative, "When the open-loop schedule planned its send.")
    sent_ms: described(NonNegative | None, "When it was sent (minus `planned_ms`: the delay).")
    created_ms: described(NonNegative | None, "When create returned; null if it failed.")
    ready_ms: described(NonNegative | None, "When its first command answered; null if never.")
    outcome: choice([o.value for o in RequestOutcome], "What became of it.")
    cause: described(Annotated[str, msgspec.Meta(max_length=300)], "Why, for any but `ok`.")


class TrialLine(Struct, tag_field="type", tag="trial", omit_defaults=True):
    """Lines 2…: one finished trial each (`"type": "trial"`), in execution order."""

    benchmark: slug(Benchmark, "slug", "A benchmark of the header…")
    benchmark_version: text(Benchmark, "version", "…and its version.", pattern=VERSION_PATTERN)
    unit: slug(Unit, "slug", "A unit of that benchmark in the header.")
    provider: slug(Provider, "slug", "A provider of the header.")
    trial: described(uuid.UUID, "The trial's id; unique.")
    round: integer(Trial, "round", "Rounds 1–4 are scheduled; top-up rounds follow.", minimum=1)
    seq: integer(Trial, "seq", "Execution order; greater than the previous line's.", minimum=1)
    attempt: integer(Trial, "attempt", "1, or higher for a top-up of the same cell.", minimum=1)
    replaces: described(
        uuid.UUID | None,
        "An earlier trial of the file, not a success, that this one replaces; null in a public "
        "file.",
    )
    batch: text(Trial, "batch", "The batch label every sandbox of the trial carried.")
    outcome: choice([o.value for o in Outcome], "What became of it; `success` in a public file.")
    owner: choice([o.value for o in Owner], 'Whose the outcome is (`""` for a success).')
    cause: text(Trial, "cause", "What happened, in words.")
    job_host: text(Trial, "job_host", "The machine the trial was timed from.")
    started_at: described(
        Moment | None, "Start of the trial's window; within the run's (not before its start)."
    )
    ended_at: described(
        Moment | None, "End of the window; not before `started_at`, nor after the run's end."
    )
    in_flight: described(NonNegative | None, "Mean count of other trials of the batch running.")
    placement: described(Object, "Untimed probes of the sandbox (CPU, kernel, file system, …).")
    host_load: described(Object, "The job host's CPU and memory load over the window.")
    metrics: described(Values, "Metric name (declared in the header) → value or null.")
    stages: described(Values, "Stage name (declared in the header) → value or null.")
    cost_usd: described(NonNegative | None, "The trial's cost from the provider's pricing.")
    clock_gates: described(ClockGates | None, "Gates of guest-timed measurements; optional.") = None
    requests: described(
        list[RequestLine], "A burst's requests in submission order (version 4); optional."
    ) = []


class CountsLine(Struct, tag_field="type", tag="counts"):
    """Lines after the trials (version 3, `"type": "counts"`): the unsuccessful attempts of one
    benchmark, unit and provider, counted by outcome, where the file holds no trial line of them."""

    benchmark: slug(Benchmark, "slug", "A benchmark of the header…")
    benchmark_version: text(Benchmark, "version", "…and its version.", pattern=VERSION_PATTERN)
    unit: slug(Unit, "slug", "A unit of that benchmark in the header.")
    provider: slug(Provider, "slug", "A provider of the header.")
    outcomes: described(
        dict[
            Literal[UNSUCCESSFUL],
            integer(UnsuccessfulCount, "unreplaced_provider_failures", "", minimum=1),
        ],
        "Outcome → number of trials; at least one outcome.",
    )
    unreplaced_provider_failures: integer(
        UnsuccessfulCount,
        "unreplaced_provider_failures",
        "Provider failures no top-up replaced, trials cut short included (what the labels "
        "count); at most "
        "`outcomes.provider_failure`.",
    )


def count(description: str, minimum: int):
    """A number of attempts: within the column range the counts lines are stored in, so that
    no sum over runs can leave what the database and the pages hold."""
    return integer(UnsuccessfulCount, "unreplaced_provider_failures", description, minimum=minimum)


class OperationCounts(Struct):
    """`operations.*` of a reliability line: one operation's attempts and the failed ones."""

    attempts: count("Attempts at the operation, the failed ones included.", 1)
    failures: described(
        dict[Literal[FAILURE_OWNERS], dict[Literal[rel.CAUSE_CLASSES], count("", 1)]],
        "Owner → cause class → failed attempts; at most `attempts` in all.",
    )


class ReliabilityLine(Struct, tag_field="type", tag="reliability"):
    """Lines after the counts (version 6, `"type": "reliability"`): one provider's attempts per
    operation over the run's finished trials, and the failed ones by owner and cause class, as
    the Reliability page counts them. Counts only: no cause, time or trial."""

    provider: slug(Provider, "slug", "A provider of the header; one line each.")
    operations: described(
        dict[Literal[rel.OPERATIONS], OperationCounts], "Operation → its attempts and failures."
    )
    unplaced: count(
        "Failures known only from an older public file's counts lines: on no operation.", 0
    )


class Trailer(Struct, tag_field="type", tag="end"):
    """The last line of a file of version 2 or later (`"type": "end"`): the file is whole."""

    trials: described(Annotated[int, msgspec.Meta(ge=0)], "The number of trial lines.")
    sha256: described(
        Annotated[str, msgspec.Meta(pattern=SHA256_PATTERN)],
        "SHA-256 (lowercase hex) of every byte before this line.",
    )


GATE_VALUES = frozenset(v for v in ClockGate.values() if v)
