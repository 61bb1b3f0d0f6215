"""A trial's outcome (common methodology, "Outcomes"): one enum for the runner, the store, the
raw-data format and the pages. Pure (no Django); boxbench.models uses its choices for the column.

A trial cut short (a step overran its limit, or its worker was lost) is a provider failure whose
outcome is really unknown: that is the Trial's `cut_short` flag, not another outcome.
"""

from __future__ import annotations

from enum import StrEnum

# The largest measurement value (and trial cost, and in-flight count) that is stored and read
# back: about 31 years in milliseconds, or 10^12 MB/s. Every statistic of values this size stays
# far from the float limit (a sum of a billion of them is 10^21); docs/raw-data.md.
MAX_VALUE = 1e12


class Outcome(StrEnum):
    SUCCESS = "success"
    PROVIDER_FAILURE = "provider_failure"
    BENCHMARK_ERROR = "benchmark_error"
    EXCLUDED = "excluded"
    MISSED = "missed"

    @property
    def label(self) -> str:
        return self.value.replace("_", " ").capitalize()

    @classmethod
    def choices(cls) -> list[tuple[str, str]]:
        """(value, label) pairs for a Django field's `choices`."""
        return [(outcome.value, outcome.label) for outcome in cls]
