"""Each benchmark's results as the overview's score table and scores.csv list them: every
provider on the board, ranked or not, with its status label, its value (the median, or a
multi-unit workload's workload value), the median's 95 % interval, n and the run it came from.
The score tree holds scores only; this is what a reader needs beside them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from boxbench.leaderboard import shapes
from boxbench.leaderboard.boards import Board


def _row(row: Mapping[str, Any], value, ci_low, ci_high) -> shapes.ResultRow:
    return {
        "provider": row["provider"],
        "label": row["label"],
        "ranked": row["ranked"],
        "n": row["n"],
        "value": value,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "run": row.get("run", ""),
        "image_digest": row.get("image_digest", ""),
    }


def board_results(board: Board) -> shapes.BoardResults:
    """The benchmark's rows and each unit's, every provider the board lists."""
    summary = board.summary
    multi = summary["multi_unit"]
    single = {r["provider"]: r for r in board.units[0]["rows"]} if len(board.units) == 1 else {}
    rows = []
    for row in summary["rows"]:
        value = row["workload_value"]
        # One unit: the value is that unit's median, and its interval goes with it.
        unit: Mapping[str, Any] = single.get(row["provider"], {}) if value is not None else {}
        rows.append(_row(row, value, unit.get("ci_low"), unit.get("ci_high")))
    return {
        "measure_unit": summary["measure_unit"],
        "lower_is_better": summary["lower_is_better"],
        "statistic": "workload value" if multi else "median",
        "rows": rows,
        "units": {
            u["unit"]: [_row(r, r["median"], r["ci_low"], r["ci_high"]) for r in u["rows"]]
            for u in board.units
        },
    }
