"""Provider capability declarations: versioned YAML files,
runner/provider_declarations/<provider>.yaml (a folder named apart from this module).

`load_declaration` validates one file into a frozen Declaration with the SHA-256 digest of its
canonical content (the parsed data as sorted, compact JSON), so a reformatted file keeps its digest
and any change of meaning gets a new one. Every problem names the file and the field.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from runner import host_price

DECLARATIONS_DIR = Path(__file__).resolve().parent / "provider_declarations"
SCHEMA_VERSION = 1
CAPABILITIES = (
    "exec",
    "file_transfer",
    "network_lockdown",
    "custom_images",
    "snapshot",
    "fork",
    "pause",
    # Create's unique per-trial layer through the provider's own image mechanism (runner/layers.py)
    "unique_layer",
    # exec hands a command's stdout on as it arrives, never holding it whole
    # (runner/providers/answers.py `stdout_streamed_to`): what output-stream needs for its 1 GiB
    "output_stream",
)

# Providers declared only to measure the runner itself (runner/providers/null.py): planned only
# when a plan names them, never offered in the admin's start form or the public catalog, and a
# run of theirs is a demo run, never published.
BENCH_ONLY = frozenset({"null"})

_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,49}$")
_TOP_KEYS = {
    "schema_version",
    "provider",
    "name",
    "adapter",
    "region",
    "region_marker",
    "region_note",
    "capabilities",
    "machine_sizes",
    "limits",
    "pricing",
    "shares_job_host",
    "known_faults",
}
_OPTIONAL_KEYS = {"region_marker", "region_note", "shares_job_host", "known_faults"}
_PRICING_KEYS = {
    "provider_sourced",
    "source",
    "date",
    "currency",
    "per_vcpu_second",
    "per_gib_second",
    "per_sandbox",
    "billing_increment_s",
    "minimum_s",
}
_LIMIT_NUMBERS = {"concurrent_sandboxes", "create_rate_per_s", "api_requests_per_s"}
# Where the limits come from: the account tier boxbench tests, the provider's page, and when read.
_LIMIT_SOURCE = {"account_tier", "source", "date"}
_LIMIT_KEYS = _LIMIT_NUMBERS | _LIMIT_SOURCE


LIMIT_SOURCE_WORDS = {
    "account_tier": "which account tier (plan) boxbench tests",
    "source": "where the limits are published",
    "date": "when the source was read (YYYY-MM-DD)",
}


class DeclarationError(ValueError):
    """A declaration file is missing, malformed or inconsistent."""


@dataclass(frozen=True)
class MachineSize:
    cpus: int
    memory_mib: int


@dataclass(frozen=True)
class Declaration:
    provider: str
    name: str
    adapter: str
    region: str
    region_marker: str
    region_note: str
    capabilities: tuple[str, ...]
    machine_sizes: tuple[MachineSize, ...]
    concurrent_sandboxes: int | None
    create_rate_per_s: float | None
    # The documented limits as declared, with their account tier, source and date: shown beside
    # burst results as published by the provider until measured.
    limits: dict = field(hash=False)
    pricing: dict = field(hash=False)
    data: dict = field(hash=False, repr=False)  # the canonical parsed file, as stored in the DB
    digest: str = ""
    pricing_digest: str = ""
    path: str = ""
    # The sandboxes run on the job host itself, so a trial's own load is the job host's load.
    shares_job_host: bool = False
    # Benchmark slug -> note: a known fault holds that benchmark back (label Not Supported).
    known_faults: dict = field(default_factory=dict, hash=False)

    def offers(self, cpus: int, memory_mib: int) -> bool:
        return MachineSize(cpus, memory_mib) in self.machine_sizes


def canonical_json(data) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_of(data) -> str:
    return hashlib.sha256(canonical_json(data).encode()).hexdigest()


def load_declaration(path: str | Path) -> Declaration:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DeclarationError(f"{path}: cannot read declaration: {exc.strerror}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DeclarationError(f"{path}: not valid YAML: {exc}") from None
    if isinstance(raw, dict) and isinstance(raw.get("provider"), str):
        # A self-hosted provider's machine, priced by the operator (runner/host_price.py).
        try:
            priced = host_price.declared_pricing(raw["provider"])
        except host_price.HostPriceError as exc:
            raise DeclarationError(f"{path}: {exc}") from None
        if priced is not None:
            raw = {**raw, "pricing": priced}
    return parse_declaration(raw, str(path))


def parse_declaration(raw, where: str) -> Declaration:
    def fail(message):
        raise DeclarationError(f"{where}: {message}")

    if not isinstance(raw, dict):
        fail("a declaration is a mapping of fields")
    data = _plain(raw)
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        fail(f"unknown field(s) {', '.join(unknown)}")
    missing = sorted(_TOP_KEYS - _OPTIONAL_KEYS - set(data))
    if missing:
        fail(f"missing field(s) {', '.join(missing)}")
    if data["schema_version"] != SCHEMA_VERSION:
        fail(f"schema_version must be {SCHEMA_VERSION}, got {data['schema_version']!r}")
    for key in ("provider", "adapter"):
        if not isinstance(data[key], str) or not _SLUG.match(data[key]):
            fail(f"{key} must be a lowercase slug, got {data[key]!r}")
    if Path(where).suffix in (".yaml", ".yml") and Path(where).stem != data["provider"]:
        fail(f"provider {data['provider']!r} must match the file name {Path(where).name!r}")
    for key in ("name", "region", "region_marker", "region_note"):
        data.setdefault(key, "")
        if not isinstance(data[key], str):
            fail(f"{key} must be text, got {data[key]!r}")
    if not data["name"]:
        fail("name must not be empty")

    capabilities = data["capabilities"]
    if not isinstance(capabilities, list) or not all(isinstance(c, str) for c in capabilities):
        fail("capabilities must be a list of names")
    bad = sorted(set(capabilities) - set(CAPABILITIES))
    if bad:
        fail(f"unknown capabilities {', '.join(bad)}; known: {', '.join(CAPABILITIES)}")

    sizes = data["machine_sizes"]
    if not isinstance(sizes, list) or not sizes:
        fail("machine_sizes must be a non-empty list of {cpus, memory_mib}")
    machine_sizes = []
    for i, size in enumerate(sizes):
        if not isinstance(size, dict) or set(size) != {"cpus", "memory_mib"}:
            fail(f"machine_sizes[{i}] must have exactly cpus and memory_mib")
        if not all(_positive_int(size[k]) for k in ("cpus", "memory_mib")):
            fail(f"machine_sizes[{i}] needs positive whole numbers, got {size}")
        machine_sizes.append(MachineSize(size["cpus"], size["memory_mib"]))

    limits = data["limits"]
    if not isinstance(limits, dict) or set(limits) - _LIMIT_KEYS:
        fail(f"limits must be a mapping with keys among {', '.join(sorted(_LIMIT_KEYS))}")
    concurrent = limits.get("concurrent_sandboxes")
    if concurrent is not None and not _positive_int(concurrent):
        fail(
            "limits.concurrent_sandboxes must be a positive whole number or null, "
            f"got {concurrent!r}"
        )
    rate = limits.get("create_rate_per_s")
    if rate is not None and not (_number(rate) and rate > 0):
        fail(f"limits.create_rate_per_s must be a positive number or null, got {rate!r}")
    requests = limits.get("api_requests_per_s")
    if requests is not None and not (_number(requests) and requests > 0):
        fail(f"limits.api_requests_per_s must be a positive number or null, got {requests!r}")
    for key in sorted(_LIMIT_SOURCE):
        if not isinstance(limits.get(key), str) or not limits[key].strip():
            fail(f"limits.{key} must say {LIMIT_SOURCE_WORDS[key]}")
    try:
        datetime.date.fromisoformat(limits["date"])
    except ValueError:
        fail(f"limits.date must be a date (YYYY-MM-DD), got {limits['date']!r}")

    shares_job_host = data.get("shares_job_host", False)
    if not isinstance(shares_job_host, bool):
        fail(f"shares_job_host must be true or false, got {shares_job_host!r}")

    known_faults = data.get("known_faults", {})
    if not isinstance(known_faults, dict) or not all(
        isinstance(k, str) and _SLUG.match(k) and isinstance(v, str) and v.strip()
        for k, v in known_faults.items()
    ):
        fail("known_faults must map benchmark slugs to a note saying what the fault is")

    pricing = data["pricing"]
    if not isinstance(pricing, dict):
        fail("pricing must be a mapping")
    unknown = sorted(set(pricing) - _PRICING_KEYS)
    missing = sorted(_PRICING_KEYS - set(pricing))
    if unknown or missing:
        fail(f"pricing fields: unknown {unknown or 'none'}, missing {missing or 'none'}")
    if not isinstance(pricing["provider_sourced"], bool):
        fail("pricing.provider_sourced must be true or false")
    if not isinstance(pricing["source"], str) or not pricing["source"].strip():
        fail("pricing.source must say where the prices come from")
    try:
        datetime.date.fromisoformat(str(pricing["date"]))
    except ValueError:
        fail(f"pricing.date must be a date (YYYY-MM-DD), got {pricing['date']!r}")
    if not isinstance(pricing["currency"], str) or pricing["currency"] != "USD":
        fail(f"pricing.currency must be USD, got {pricing['currency']!r}")
    for key in ("per_vcpu_second", "per_gib_second", "per_sandbox", "billing_increment_s"):
        if not (_number(pricing[key]) and pricing[key] >= 0):
            fail(f"pricing.{key} must be a number >= 0, got {pricing[key]!r}")
    if not (_number(pricing["minimum_s"]) and pricing["minimum_s"] >= 0):
        fail(f"pricing.minimum_s must be a number >= 0, got {pricing['minimum_s']!r}")
    rates = ("per_vcpu_second", "per_gib_second", "per_sandbox")
    if pricing["provider_sourced"] and not any(pricing[key] > 0 for key in rates):
        # Every trial would cost 0, which no cost score can rank (a geometric mean of costs).
        fail(f"pricing.provider_sourced is true but {', '.join(rates)} are all 0")

    return Declaration(
        provider=data["provider"],
        name=data["name"],
        adapter=data["adapter"],
        region=data["region"],
        region_marker=data["region_marker"],
        region_note=data["region_note"],
        capabilities=tuple(capabilities),
        machine_sizes=tuple(machine_sizes),
        concurrent_sandboxes=concurrent,
        create_rate_per_s=float(rate) if rate is not None else None,
        limits=dict(limits),
        pricing=pricing,
        data=data,
        digest=sha256_of(data),
        pricing_digest=sha256_of(pricing),
        path=where,
        shares_job_host=shares_job_host,
        known_faults=dict(known_faults),
    )


def load_all(directory: str | Path = DECLARATIONS_DIR) -> dict[str, Declaration]:
    """Every declaration in `directory`, by provider slug."""
    declarations = {}
    for path in sorted(Path(directory).glob("*.yaml")):
        declaration = load_declaration(path)
        declarations[declaration.provider] = declaration
    return declarations


def get_declaration(slug: str, directory: str | Path = DECLARATIONS_DIR) -> Declaration:
    path = Path(directory) / f"{slug}.yaml"
    if not path.exists():
        known = ", ".join(sorted(load_all(directory))) or "none"
        raise DeclarationError(
            f"no declaration for provider {slug!r} in {directory} (known: {known})"
        )
    return load_declaration(path)


def _plain(value):
    """YAML dates become ISO text so the canonical JSON (and the digest) is well defined."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
