"""What a publication changes on the board: each provider's standing on each board (benchmark
pages, the Overall and its sections) before and after, read from the materialized pages.

Pure: it reads page dictionaries (boxbench.leaderboard.shapes) and imports no Django, so the
publish preview (boxbench/control_room.py) and its tests share one reading of a page.
"""

from __future__ import annotations

from dataclasses import dataclass

ABSENT = "not on the board"


@dataclass(frozen=True)
class Standing:
    board: str  # the board's title
    provider: str  # the provider's display name
    rank: int | None
    label: str | None
    run: str | None  # the run the row comes from (benchmark boards only)

    def text(self) -> str:
        if self.rank is not None:
            return f"#{self.rank}"
        return self.label or "listed, unranked"


def standings(benchmark_pages: list[dict], overview: dict | None) -> dict[tuple, Standing]:
    """{(board key, provider slug): Standing} over every benchmark board, the Overall and its
    sections."""
    found: dict[tuple, Standing] = {}
    for page in benchmark_pages:
        for row in page.get("rows", []):
            found[(page["benchmark"], row["provider"])] = Standing(
                board=page["title"],
                provider=row.get("provider_name") or row["provider"],
                rank=row.get("rank"),
                label=row.get("label"),
                run=row.get("run"),
            )
    if overview:
        names = {slug: p["provider_name"] for slug, p in overview.get("providers", {}).items()}
        root = overview["tree"]
        for node in [root, *root.get("children", [])]:
            for provider in node.get("scores", {}):
                found[(f"score:{node['key']}", provider)] = Standing(
                    board=node["label"],
                    provider=names.get(provider, provider),
                    rank=node.get("ranks", {}).get(provider),
                    label=None,
                    run=None,
                )
    return found


def changes(before: dict[tuple, Standing], after: dict[tuple, Standing], run_id: str) -> dict:
    """What moves between two sets of standings: each row whose rank, label or source run
    differs (joining or leaving the board too), the scores first, then boards in title order;
    and the benchmark rows the run feeds after the publication."""
    moved = []
    for key in sorted(set(before) | set(after), key=lambda k: _order(k, before, after)):
        old, new = before.get(key), after.get(key)
        if (
            old is not None
            and new is not None
            and (old.rank, old.label, old.run)
            == (
                new.rank,
                new.label,
                new.run,
            )
        ):
            continue
        shown = new or old
        assert shown is not None
        moved.append(
            {
                "board": shown.board,
                "provider": shown.provider,
                "before": old.text() if old else ABSENT,
                "after": new.text() if new else ABSENT,
                "from_run": bool(new and new.run == run_id),
                "rank_before": old.rank if old else None,
                "rank_after": new.rank if new else None,
            }
        )
    fed = sorted((s.board, s.provider, s.text()) for s in after.values() if s.run == run_id)
    return {"changes": moved, "fed": [{"board": b, "provider": p, "after": t} for b, p, t in fed]}


def _order(key: tuple, before: dict, after: dict) -> tuple:
    # The Overall and its sections first: the scores a reader looks at before any benchmark.
    shown = after.get(key) or before[key]
    return (not str(key[0]).startswith("score:"), shown.board, shown.provider)
