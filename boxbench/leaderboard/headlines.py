"""Each section's headline benchmark for the overview's pictures: the charted benchmark of the
section that ranks the most providers (the first by slug on a tie), its values and the runs,
seeds and job hosts behind them."""

from __future__ import annotations

from boxbench.leaderboard import shapes
from boxbench.leaderboard.boards import Board
from boxbench.models import Run, Section


def headlines(boards: list[Board]) -> list[shapes.Headline]:
    by_section: dict[str, list[Board]] = {}
    for board in boards:
        if board.benchmark.charted:
            by_section.setdefault(board.benchmark.section, []).append(board)
    found = []
    for section in Section:
        candidates = by_section.get(section.value, [])
        if not candidates:
            continue
        board = max(candidates, key=lambda b: (_ranked(b), _reverse(b.benchmark.slug)))
        found.append(_headline(board))
    return found


def _ranked(board: Board) -> int:
    return sum(1 for row in board.summary["rows"] if row["ranked"])


def _reverse(slug: str) -> tuple[int, ...]:
    # max() with this key prefers the slug that sorts first.
    return tuple(-ord(c) for c in slug)


def _headline(board: Board) -> shapes.Headline:
    summary = board.summary
    multi = summary["multi_unit"]
    info = ("provider", "provider_name", "region_marker", "region_note", "colour_index")
    rows: list[shapes.HeadlineRow] = []
    for row in summary["rows"] if multi else board.units[0]["rows"]:
        value = row["workload_value"] if multi else row["median"]
        rows.append(
            {
                **{k: row[k] for k in info},  # type: ignore[typeddict-item]
                "value": value if row["ranked"] else None,
                "ci_low": None if multi or not row["ranked"] else row["ci_low"],
                "ci_high": None if multi or not row["ranked"] else row["ci_high"],
                "ranked": row["ranked"],
                "label": row["label"],
                "meaning": row["meaning"],
            }
        )
    return {
        "section": board.benchmark.section,
        "section_label": Section(board.benchmark.section).label,
        "benchmark": board.benchmark.slug,
        "title": board.benchmark.title,
        "value_kind": "workload value" if multi else "median",
        "measure_unit": summary["measure_unit"],
        "lower_is_better": summary["lower_is_better"],
        "rows": rows,
        "runs": _runs(board),
    }


def _runs(board: Board) -> list[shapes.HeadlineRun]:
    """Each distinct run behind the board, the newest first, with its seed and job hosts."""
    by_run: dict = {}
    for slug, run in board.runs.items():
        by_run.setdefault(run.id, (run, []))[1].append(slug)
    ordered = sorted(by_run.values(), key=lambda item: (item[0].published_at, str(item[0].id)))
    return [
        {
            "run": str(run.id),
            "run_name": run.name,
            "seed": run.typed_manifest.seed,
            "job_hosts": _job_hosts(run, sorted(slugs)),
        }
        for run, slugs in reversed(ordered)
    ]


def _job_hosts(run: Run, slugs: list[str]) -> list[str]:
    hosts = []
    for slug in slugs:
        entry = run.typed_manifest.providers.get(slug)
        if entry is None:
            continue
        where = ", ".join(part for part in (entry.job_host_type, entry.job_host_region) if part)
        name = f"{entry.job_host} ({where})" if where else entry.job_host
        if name not in hosts:
            hosts.append(name)
    return sorted(hosts)
