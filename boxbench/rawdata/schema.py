"""The raw-data format's fixed parts: its version, the fields of each record, the canonical JSON.

See docs/raw-data.md.
"""

from __future__ import annotations

from datetime import UTC, datetime

import orjson

from boxbench.models import ClockGate, Outcome, Owner, RunStatus

SCHEMA_VERSION = 1
PAGE_SIZE = 5000

BENCHMARK_FIELDS = (
    "slug", "version", "title", "description", "section", "metric", "unit", "direction",
    "statistic", "clock", "cpus", "memory_mib", "trials_per_unit", "ranking_floor",
    "required_capabilities", "stage_names", "charted", "steps_include_create_or_build",
)  # fmt: skip
PROVIDER_FIELDS = (
    "slug", "name", "adapter", "region", "region_marker", "region_note", "declaration",
    "declaration_digest", "pricing", "pricing_digest",
)  # fmt: skip
UNIT_FIELDS = ("slug", "title", "definition", "digest")
TRIAL_COLUMNS = (
    "id", "benchmark_id", "unit_id", "provider_id", "round", "seq", "attempt", "replaces_id",
    "batch", "outcome", "owner", "cause", "job_host", "started_at", "ended_at", "in_flight",
    "placement", "host_load", "cost_usd",
)  # fmt: skip
CSV_COLUMNS = (
    "run", "benchmark", "unit", "provider", "trial", "round", "seq", "attempt", "replaces",
    "batch", "outcome", "owner", "cause", "job_host", "started_at", "ended_at", "in_flight",
    "cost_usd", "placement", "host_load", "metrics", "stages",
)  # fmt: skip


# Choices as plain sets: Django's enum `.values` is rebuilt on every access, too slow per line.
OUTCOMES = frozenset(o.value for o in Outcome)
OWNERS = frozenset(Owner.values)
GATES = frozenset(ClockGate.values)
RUN_STATUSES = frozenset(RunStatus.values)


class RawDataError(Exception):
    """A file that cannot be imported; the message names the file, line and field."""


def _dumps(value) -> str:
    """Canonical JSON: keys sorted at every level, compact, UTF-8. The same data always gives
    the same bytes, whatever order a database stores JSON keys in."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
