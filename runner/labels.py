"""Batch labels: every sandbox a trial creates carries one, and cleanup finds a run's sandboxes by
its prefix. The prefix holds the first LABEL_DIGITS hex digits of the run's id, kept short
because providers put labels into names; the database keeps those digits unique
(Run.label_prefix), so no two runs ever share a label.
"""

from __future__ import annotations

LABEL_DIGITS = 12


def run_digits(run_id) -> str:
    """The hex digits of `run_id` that the run's labels carry."""
    return str(run_id).replace("-", "")[:LABEL_DIGITS]


def run_prefix(run_id) -> str:
    return f"bb-{run_digits(run_id)}-"


def batch_label(run_id, provider: str, benchmark: str, round_no: int) -> str:
    return f"{run_prefix(run_id)}{provider}-{benchmark}-r{round_no}"
