"""The run page's control room for staff: one row per audited pair (its trials, its verdict,
what holds it back, and what may be done about it: resolve a failing check, re-run the pair),
and the publish preview.

The preview rehearses the publication with the very code the CLI and the Publish button run
(publishing.publish, which audits and materializes), reads the board it would produce, and rolls
it all back: what it shows is what publishing does, never a second computation of it.
"""

from __future__ import annotations

from django.db import transaction

from boxbench import board_changes, holdbacks, publishing
from boxbench.leaderboard.shapes import ShapeError
from boxbench.models import Aggregate, Run, Scope


def audit_rows(run: Run, pairs: list[dict], cells: list[dict], held: list[dict]) -> list[dict]:
    """One row per pair of the run's audit (pairs as the run page lists them, with each check's
    resolution), with its progress and whether it publishes."""
    progress = {(c["provider"], c["benchmark"]): c for c in cells if "refusal" not in c}
    held_by = {(p["provider"], p["benchmark"]): p for p in held}
    rows = []
    for pair in pairs:
        key = (pair["provider"], pair["benchmark"])
        cell = progress.get(key, {})
        checks = pair["check_list"]
        failing = [c["name"] for c in checks if c["verdict"] == "fail" and not c["resolution"]]
        hold = held_by.get(key)
        if hold:
            status = "; ".join(c["why"] for c in hold["checks"])
        else:
            status = "on the board from this run" if run.published else "publishes with the run"
        rows.append(
            {
                "provider": pair["provider"],
                "benchmark": pair["benchmark"],
                "key": "/".join(key),
                "verdict": pair["verdict"],
                "done": cell.get("done"),
                "target": cell.get("target"),
                "failing": failing,
                "resolved": [
                    f"{c['name']}: {c['resolution']['kind']}" for c in checks if c["resolution"]
                ],
                "held": hold is not None,
                "status": status,
            }
        )
    return rows


def rehearse(run: Run, actor=None) -> dict:
    """What publishing `run` now would change on the board: {"refused": why, or ""; "held_back":
    the run's pairs kept out; "changes" and "fed" (board_changes.changes)}. Nothing is kept."""
    before = _standings()
    with transaction.atomic():
        fresh = Run.objects.select_for_update().get(pk=run.pk)
        again = fresh.published
        try:
            publishing.publish(fresh, actor=actor)
        except (publishing.PublishRefused, ShapeError) as exc:
            transaction.set_rollback(True)
            return {"refused": str(exc), "republish": again}
        after = _standings()
        held = holdbacks.held_back([fresh])[fresh.id]
        transaction.set_rollback(True)
    found = board_changes.changes(before, after, str(run.id))
    return {"refused": "", "republish": again, "held_back": held, **found}


def _standings() -> dict:
    boards = list(Aggregate.objects.filter(scope=Scope.BENCHMARK).values_list("data", flat=True))
    return board_changes.standings(boards, Aggregate.objects.page(Scope.OVERVIEW))
