"""Providers a board holds no numbers of because the audit held their pair back: they keep a
place on the board with the check that failed and the published run that says so, earn no rank
and no points, and nobody is crowned over them in silence."""

from __future__ import annotations

from boxbench.leaderboard import shapes
from boxbench.leaderboard.boards import Board
from boxbench.models import Provider, Run

HELD_BACK = "Held Back"


def held_back_rows(
    board: Board, held: dict, published: list[Run], providers: dict[int, Provider]
) -> list[shapes.WithheldRow]:
    """Each provider with a held-back pair of this benchmark in a published run and no numbers
    on the board from any other run, the newest such run first (`held` as
    boxbench.holdbacks.held_back gives it)."""
    names = {p.slug: p.name for p in providers.values()}
    found: dict[str, shapes.WithheldRow] = {}
    for run in published:  # newest first
        for pair in held.get(run.id, []):
            slug = pair["provider"]
            if pair["benchmark"] != board.benchmark.slug or slug in board.runs or slug in found:
                continue
            checks = [c["check"] for c in pair["checks"]]
            found[slug] = {
                "provider": slug,
                "provider_name": names.get(slug, slug),
                "label": HELD_BACK,
                "meaning": f"held back by the audit ({', '.join(checks)}), see the run",
                "checks": checks,
                "run": str(run.id),
                "run_name": run.name,
            }
    return [found[slug] for slug in sorted(found)]
