"""The RL board's projection of a million rollouts as columns of its CSV and API table
(boxbench.leaderboard.rollouts): each figure with its 95 % interval, and the inputs missing."""

from __future__ import annotations

from boxbench.templatetags.boxbench_format import num, usd

FIGURES = (
    ("episode_s", "rollout episode (s)", num),
    ("knee_throughput_per_s", "rollout knee throughput (per s)", num),
    ("sandbox_hours", "1M rollouts sandbox-hours", num),
    ("wall_hours", "1M rollouts wall hours", num),
    ("cost_usd", "1M rollouts cost (USD)", usd),
)
COLUMNS = [
    "rollout knee tier",
    *(f"{title}{end}" for _, title, _ in FIGURES for end in ("", " ci_low", " ci_high")),
    "rollout missing input",
]
NOT_PROJECTED = "Not projected: the last rollout column says which input is missing."
BLANK = dict.fromkeys(COLUMNS, NOT_PROJECTED)


def projection_cells(projection: dict, provider: str) -> list[str]:
    """The projection's cells for one provider's row; blank where it was not projected."""
    row = next((r for r in projection["rows"] if r["provider"] == provider), None)
    if row is None:
        return [""] * (len(COLUMNS) - 1) + ["not on the RL rollouts board"]
    figures = row["figures"] or {}
    cells = [str(figures["knee_tier"]) if figures else ""]
    for key, _, text in FIGURES:
        found = figures.get(key) or {}
        cells += [text(found.get("value")), text(found.get("ci_low")), text(found.get("ci_high"))]
    return [*cells, "; ".join(row["missing"])]
