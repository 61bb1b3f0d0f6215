"""The run manifest as a type (no Django): what makes a run reproducible, with its schema version.

The database keeps the manifest as JSON (Run.manifest); `Manifest.from_json` reads it, refusing a
malformed one with a ManifestError naming the field, and `to_json` writes it back in the shape the
planner always wrote, so stored manifests and raw-data exports keep their keys. A manifest
imported from raw data may hold only some sections (a hand-made file: a seed and image digests):
every section defaults to empty, and only the keys present are checked.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from runner.rules import Refusal

MANIFEST_SCHEMA = 1

PositiveInt = Annotated[int, msgspec.Meta(ge=1)]


class ManifestError(ValueError):
    """A stored or imported manifest does not have the manifest's shape."""


class Plan(msgspec.Struct):
    """What was asked for when the run was planned."""

    benchmarks: list[str]
    providers: list[str]
    trials_per_unit: PositiveInt | None = None  # None: each benchmark's declared N
    concurrency: PositiveInt | None = None  # the override; None: each benchmark's declaration
    job_host_cap: PositiveInt | None = None
    allow_busy_account: bool = False
    budget_usd: float | None = None
    refill_minutes: float = 10.0
    rounds: PositiveInt = 4


class PlannedBenchmark(msgspec.Struct):
    """One benchmark as planned: its version, N, units and parallel trials."""

    trials_per_unit: PositiveInt
    version: str | None = None
    ranking_floor: int | None = None
    # The floor of this run's own units where the workload derives it per run (`floor_share`);
    # None: the declared floor, its share taken for a subset of the units.
    run_floor: PositiveInt | None = None
    units: list[str] = msgspec.field(default_factory=list)
    parallel_trials: PositiveInt = 1
    declared_parallel_trials: int | None = None
    sandboxes_per_trial: PositiveInt = 1


class ProviderEntry(msgspec.Struct):
    """One planned provider: its declaration and pricing digests, job host and seq range."""

    job_host: str
    seq_base: int
    # The job host's machine type and region; a chain writes its own host's when it starts.
    # Empty: a run that did not record them (its results are a series of their own).
    job_host_type: str = ""
    job_host_region: str = ""
    declaration_digest: str = ""
    pricing_digest: str = ""
    create_rate_per_s: float | None = None


class CodeCommit(msgspec.Struct, omit_defaults=True):
    """The boxbench checkout that planned the run (runner/provenance.py), or why it is unknown."""

    commit: str | None = None
    dirty: bool | None = None  # uncommitted changes to the code at planning time
    error: str | None = None


class AdapterVersion(msgspec.Struct):
    """A provider's pinned adapter: its key, the SHA-256 of its source files (and the shared
    modules every adapter runs through), and the versions of the client libraries it calls."""

    adapter: str
    source_sha256: str
    files: list[str]
    clients: dict[str, str] = msgspec.field(default_factory=dict)
    # The SDK's mode where the adapter does not run its SDK's default (Daytona's polling).
    sdk_mode: str = ""


class ChainPlan(msgspec.Struct, omit_defaults=True):
    """A provider's chain: its shuffled (benchmark, round) order and, once it stopped early, why
    (`stopped`: a refusal or unverified cleanup; `error`: a failure). Where a running chain
    stands is not here but in its ChainProgress row (runner/steps.py), the one live state."""

    order: list[tuple[str, int]]
    stopped: str | None = None
    error: str | None = None


class ImageIdentity(msgspec.Struct, omit_defaults=True):
    """What a provider's sandboxes ran: {reference, digest}, or {error} saying why it is unknown."""

    reference: str | None = None
    digest: str | None = None
    error: str | None = None


class LiveCheck(msgspec.Struct, omit_defaults=True):
    """One check of the account's live sandboxes (others: not this run's), or why it failed."""

    others: int | None = None
    other_ids: list[str] | None = None
    own: int | None = None
    at: str | None = None  # ISO 8601
    error: str | None = None


class Endpoint(msgspec.Struct):
    host: str
    port: int
    median_connect_ms: float | None
    attempts: int
    errors: list[str]


class NetworkBaseline(msgspec.Struct, omit_defaults=True):
    """Median TCP connect times from the job host to the provider's endpoints, or an error."""

    job_host: str | None = None
    endpoints: list[Endpoint] | None = None
    error: str | None = None


class CreateSpacing(msgspec.Struct):
    create_rate_per_s: float | None
    min_interval_s: float
    waits: int
    waited_s: float


class TopUps(msgspec.Struct):
    rounds: int
    stopped: str | None


class Leftovers(msgspec.Struct):
    """boxbench's own sandboxes of finished or lost batches that the empty-account check found
    and destroyed before a chain started (a foreign sandbox is never touched)."""

    removed: list[str]
    batches: list[str]
    errors: list[str]


class BackendWait(msgspec.Struct, omit_defaults=True):
    """A wait for a provider's backend after a create it could not be reached for
    (runner/outage.py): which trial's create failed and why, how long the chain's workers
    waited and probed, and whether the backend came back."""

    trial_seq: int | None  # None only for a trial outside the run's numbering
    reason: str
    started_at: str  # ISO 8601
    waited_s: float
    probes: int
    back: bool
    last_error: str | None = None
    abandoned: str | None = None


class Schedule(msgspec.Struct):
    """How chains share job hosts (runner/steps.py): the chains planned on one job host form a
    lane and take turns, step by step, so each is timed alone there; where sandboxes run on the
    job host itself, parallel trials are capped so their CPUs fit the host's cores. `capped`:
    benchmark -> [asked, allowed]."""

    lanes: dict[str, list[str]]
    host_cpus: int
    capped: dict[str, list[int]]
    reason: str


class DemoRun(msgspec.Struct):
    """A demo run against loopback fakes (runner/providers/demo.py): never published."""

    providers: list[str]
    note: str


class RerunOf(msgspec.Struct):
    """A run of one pair the audit of `run` held back, re-run once (boxbench/reruns.py)."""

    run: str  # the original run's id
    provider: str
    benchmark: str


class Manifest(msgspec.Struct):
    """A run's manifest. Sections keyed by provider slug are dicts; `stopped_units` holds
    (provider, benchmark, unit) triples that a benchmark error stopped."""

    schema_version: int = MANIFEST_SCHEMA
    seed: int | None = None
    plan: Plan | None = None  # None: an imported run that records no plan
    refusals: list[Refusal] = msgspec.field(default_factory=list)
    versions: dict[str, str] = msgspec.field(default_factory=dict)
    images: dict[str, ImageIdentity] = msgspec.field(default_factory=dict)
    benchmarks: dict[str, PlannedBenchmark] = msgspec.field(default_factory=dict)
    providers: dict[str, ProviderEntry] = msgspec.field(default_factory=dict)
    chains: dict[str, ChainPlan] = msgspec.field(default_factory=dict)
    network_baselines: dict[str, NetworkBaseline] = msgspec.field(default_factory=dict)
    live_sandboxes: dict[str, dict[str, LiveCheck]] = msgspec.field(default_factory=dict)
    create_spacing: dict[str, CreateSpacing] = msgspec.field(default_factory=dict)
    stopped_units: list[tuple[str, str, str]] = msgspec.field(default_factory=list)
    topups: dict[str, TopUps] = msgspec.field(default_factory=dict)
    batches_stopped_early: list[str] = msgspec.field(default_factory=list)
    # Imported runs may name their images directly: per benchmark (or "standard"), or one digest.
    image_digests: dict[str, str] | None = None
    image_digest: str | None = None
    demo: DemoRun | None = None
    schedule: Schedule | None = None
    leftovers: dict[str, Leftovers] = msgspec.field(default_factory=dict)
    backend_waits: dict[str, list[BackendWait]] = msgspec.field(default_factory=dict)
    code: CodeCommit | None = None  # None: a run planned before it was recorded, or imported
    adapters: dict[str, AdapterVersion] = msgspec.field(default_factory=dict)  # by provider
    # Every audit threshold, fixed when the run is planned (stats.audit.AuditSettings.to_dict);
    # the audit reads them from here. None: a run planned before they were recorded, or imported.
    audit_settings: dict[str, Any] | None = None
    rerun_of: RerunOf | None = None  # None: not a re-run of a held-back pair
    # Chains timed at once on one job host, written when the run ends (runner/rules.py
    # chain_overlaps): {provider: {other provider: its trials that overlapped the other's}}.
    chain_overlaps: dict[str, dict[str, int]] = msgspec.field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any, where: str = "the manifest") -> Manifest:
        """The typed manifest of a stored or imported JSON value; ManifestError when malformed."""
        if not isinstance(data, dict):
            raise ManifestError(f"{where} must be a JSON object, not {type(data).__name__}")
        version = data.get("schema_version", MANIFEST_SCHEMA)
        if version != MANIFEST_SCHEMA:
            raise ManifestError(
                f"{where} has schema_version {version!r}; this version reads {MANIFEST_SCHEMA}"
            )
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as exc:
            # msgspec's message names the field's path, e.g. "at `$.chains[...].order`".
            raise ManifestError(f"{where} is malformed: {exc}") from None

    def to_json(self) -> dict:
        """The JSON the database stores: every section, optional keys only when set."""
        data = msgspec.json.decode(msgspec.json.encode(self))  # tuples as JSON lists
        for key in _ONLY_WHEN_SET:
            if not data[key]:
                del data[key]
        return data

    # Readers --------------------------------------------------------------------------------

    def chain_order(self, provider: str) -> list[tuple[str, int]]:
        return list(self.chains[provider].order)

    def digest_for(self, benchmark: str, providers: list[str] | None = None) -> str:
        """The image digest a benchmark ran on: the imported `image_digests` (per benchmark, or
        "standard") first; else the one digest that `providers` (default: all) share in `images`;
        else the imported single `image_digest`; "" when they differ or none is known."""
        if self.image_digests is not None:
            return self.image_digests.get(benchmark) or self.image_digests.get("standard") or ""
        if self.images:
            found = {
                entry.digest or ""
                for slug, entry in self.images.items()
                if providers is None or slug in providers
            }
            found.discard("")
            return found.pop() if len(found) == 1 else ""
        return self.image_digest or ""

    def planned_successes(self) -> int | None:
        """The successful trials the plan asks for: per provider chain, each of its benchmarks'
        trials per unit times its units. None when the manifest records no chains."""
        if not self.chains:
            return None
        total = 0
        for chain in self.chains.values():
            for slug in {benchmark for benchmark, _ in chain.order}:
                planned = self.benchmarks.get(slug)
                if planned is not None:
                    total += planned.trials_per_unit * (len(planned.units) or 1)
        return total

    # Changes (runner/store.update_manifest applies them under the run's row lock) -------------

    def stop_unit(self, provider: str, benchmark: str, unit: str) -> None:
        if (provider, benchmark, unit) not in self.stopped_units:
            self.stopped_units.append((provider, benchmark, unit))

    def record_live(self, provider: str, moment: str, check: LiveCheck) -> None:
        self.live_sandboxes.setdefault(provider, {})[moment] = check

    def stop_chain(self, provider: str, *, stopped: str | None = None, error: str | None = None):
        """Record why a provider's chain stopped early: `stopped` or `error`, whichever is given."""
        chain = self.chains[provider]
        if stopped is not None:
            chain.stopped = stopped
        if error is not None:
            chain.error = error


def live_checks_from_json(data: Any, where: str) -> dict[str, dict[str, LiveCheck]]:
    """A manifest's `live_sandboxes` section alone (read by a JSON-path query), typed."""
    try:
        return msgspec.convert(data or {}, dict[str, dict[str, LiveCheck]])
    except msgspec.ValidationError as exc:
        raise ManifestError(f"{where}: live_sandboxes is malformed: {exc}") from None


_ONLY_WHEN_SET = (
    "batches_stopped_early",
    "image_digests",
    "image_digest",
    "demo",
    "schedule",
    "leftovers",
    "backend_waits",
    "code",
    "adapters",
    "audit_settings",
    "rerun_of",
    "chain_overlaps",
)


# The public projection of a stored manifest: what reproduces and places the run (the seed, the
# plan, the schedule, digests, the code commit, the job hosts the pages name, the refusals the
# boards label), without what only operators need or may not show: other accounts' sandbox ids
# (live checks, leftovers), backends' error texts (waits, network baselines, an image's or a
# chain's error), adapter files and pacing. Sections are kept whole, or only the fields named.
PUBLIC_SECTIONS = (
    "schema_version",
    "seed",
    "plan",
    "refusals",
    "versions",
    "benchmarks",
    "stopped_units",
    "image_digests",
    "image_digest",
    "schedule",
    "audit_settings",
    "rerun_of",
    "chain_overlaps",  # providers and counts only: readers see which chains shared a job host
)
PUBLIC_FIELDS = {
    "images": ("reference", "digest"),
    "providers": (
        "job_host",
        "seq_base",
        "job_host_type",
        "job_host_region",
        "declaration_digest",
        "pricing_digest",
    ),
    "chains": ("order",),
}
PUBLIC_CODE_FIELDS = ("commit", "dirty")


def public_manifest(data: dict) -> dict:
    """The public projection of a stored manifest (JSON in, JSON out, keys in stored order), so
    that projecting a projection changes nothing."""
    public: dict = {}
    for key, value in data.items():
        if key in PUBLIC_SECTIONS:
            public[key] = value
        elif key in PUBLIC_FIELDS and isinstance(value, dict):
            fields = PUBLIC_FIELDS[key]
            public[key] = {
                name: {f: v for f, v in entry.items() if f in fields}
                if isinstance(entry, dict)
                else entry
                for name, entry in value.items()
            }
        elif key == "code" and isinstance(value, dict):
            public[key] = {f: v for f, v in value.items() if f in PUBLIC_CODE_FIELDS}
    return public
