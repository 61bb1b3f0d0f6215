"""Stored definitions never change: the one place that writes Provider, Benchmark and Unit rows.

A provider's declaration and pricing, a benchmark's definition (slug and version) and its units are
written once. Whoever brings a definition later, planning a run from the code or importing a raw
data file, either finds the stored row identical or is refused with a message naming the slug and
every field that differs; nothing is updated in place, so a run keeps the definitions it was
measured under. A benchmark whose definition or units change takes a new version (a new row); a
provider whose declaration or pricing changes takes a new slug.
"""

from __future__ import annotations

from boxbench.models import Benchmark, Provider, Unit
from runner import host_price

PROVIDER_FIELDS = (
    "slug",
    "name",
    "adapter",
    "region",
    "region_marker",
    "region_note",
    "declaration",
    "declaration_digest",
    "pricing",
    "pricing_digest",
)
BENCHMARK_FIELDS = (
    "slug",
    "version",
    "title",
    "description",
    "section",
    "metric",
    "unit",
    "direction",
    "statistic",
    "clock",
    "cpus",
    "memory_mib",
    "trials_per_unit",
    "ranking_floor",
    "required_capabilities",
    "stage_names",
    "charted",
    "steps_include_create_or_build",
)
UNIT_FIELDS = ("slug", "title", "definition", "digest")
# Shown by digest rather than in full: the whole declaration would drown the message.
_BY_DIGEST = {"declaration": "declaration_digest", "pricing": "pricing_digest"}


class DefinitionConflict(ValueError):
    """A definition differs from the stored one under the same slug (and version)."""

    def __init__(self, what: str, field: str, message: str):
        super().__init__(message)
        self.what = what
        self.field = field  # the first differing field, for messages that name one field


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def differences(row, values: dict, fields: tuple[str, ...], origin: str) -> list[tuple[str, str]]:
    """(field, "stored X, ORIGIN says Y") for every field where the stored row differs."""
    found = []
    for name in fields:
        stored, given = getattr(row, name), values.get(name)
        if stored == given:
            continue
        if name in _BY_DIGEST:
            digest = _BY_DIGEST[name]
            stored, given = f"digest {getattr(row, digest)}", f"digest {values.get(digest)}"
            if stored == given:
                stored, given = "(same digest, other content)", "(other content)"
        found.append((name, f"stored {name} is {_shown(stored)}, {origin} says {_shown(given)}"))
    return found


def _ensure(
    model,
    values: dict,
    origin: str,
    *,
    lookup: dict,
    fields: tuple[str, ...],
    what: str,
    advice: str,
    parent: dict | None = None,
):
    """The stored row found by `lookup` if it has exactly these values, created if none is."""
    row = model.objects.filter(**lookup).first()
    if row is None:
        return model.objects.create(**(parent or {}), **{name: values[name] for name in fields})
    found = differences(row, values, fields, origin)
    if found:
        detail = "; ".join(text for _, text in found)
        raise DefinitionConflict(what, found[0][0], f"{what}: {detail}; {advice}")
    return row


def ensure_provider(values: dict, origin: str) -> Provider:
    """The stored provider with exactly these values, created if the slug is new."""
    return _ensure(
        Provider,
        values,
        origin,
        lookup={"slug": values["slug"]},
        fields=PROVIDER_FIELDS,
        what=f"provider {values['slug']!r}",
        advice="stored declarations never change: give the changed declaration a new slug, or "
        "use a database without this provider" + _host_price_advice(values["slug"]),
    )


def _host_price_advice(slug: str) -> str:
    """A self-hosted provider's pricing changes with its host price setting."""
    hint = host_price.setting_hint(slug)
    if not hint:
        return ""
    return (
        " (its pricing follows the host price the operator sets: keep the setting this database "
        "was made with, or start from a fresh one)"
    )


def ensure_benchmark(values: dict, origin: str) -> Benchmark:
    """The stored benchmark version with exactly this definition, created if the version is new."""
    return _ensure(
        Benchmark,
        values,
        origin,
        lookup={"slug": values["slug"], "version": values["version"]},
        fields=BENCHMARK_FIELDS,
        what=f"benchmark {values['slug']!r} version {values['version']!r}",
        advice="stored definitions never change: a changed definition needs a new version",
    )


def ensure_unit(benchmark: Benchmark, values: dict, origin: str) -> Unit:
    """The stored unit with exactly this definition, created if the benchmark version lacks it.

    A unit added to a stored version is accepted (the benchmark's published units grow); a unit
    whose definition differs is refused, never silently kept as it was.
    """
    return _ensure(
        Unit,
        values,
        origin,
        lookup={"benchmark": benchmark, "slug": values["slug"]},
        fields=UNIT_FIELDS,
        what=f"benchmark {benchmark.slug!r} version {benchmark.version!r} unit {values['slug']!r}",
        advice="stored definitions never change: a changed unit needs a new benchmark version",
        parent={"benchmark": benchmark},
    )
