"""Providers a board holds no numbers of because the audit held their pair back: they keep a
place on the board with the check that failed and the published run that says so, earn no rank
and no points, and nobody is crowned over them in silence."""

from __future__ import annotations

from collections import Counter

from boxbench.leaderboard import shapes
from boxbench.leaderboard.boards import Board, benchmark_board
from boxbench.models import Benchmark, Provider, Run, Trial
from stats.audit import CHECK_WORDS

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


def held_back_sentence(boards: list[Board]) -> str:
    """The overview's word on the pairs the audit held back ("" when none): how many of the
    board's provider-benchmark pairs, on how many benchmarks and for which checks, so a reader
    of the first screen knows what the ranks below leave out."""
    held = [(board, row) for board in boards for row in board.summary.get("held_back", [])]
    if not held:
        return ""
    shown = sum(len(board.runs) for board in boards)
    checks = Counter(check for _, row in held for check in row["checks"])
    why = "; ".join(f"{CHECK_WORDS.get(c, c)}: {n}" for c, n in checks.most_common())
    benchmarks = len({board.benchmark.slug for board, _ in held})
    return (
        f"Held back by the audit: {len(held)} of {len(held) + shown} provider-benchmark pairs, "
        f"on {benchmarks} benchmark{'s' if benchmarks != 1 else ''} ({why}). They have no rank "
        "and no points until resolved; each benchmark page lists them and links the run."
    )


def withheld_boards(
    published: list[Run], held: dict, sources: dict, providers: dict[int, Provider]
) -> list[Board]:
    """A board for each benchmark whose every published pair the audit held back (`sources` as
    leaderboard_sources gives it, which leaves such a benchmark out): its page stays, each
    provider a held-back row, with no number, no rank and no trial of the held-back runs."""
    shown = set(Benchmark.objects.filter(id__in=sources).values_list("slug", flat=True))
    provider_ids = {p.slug: p.id for p in providers.values()}
    wanted: dict[str, dict[int, Run]] = {}  # benchmark slug -> {provider id: newest run}
    for run in published:  # newest first
        for pair in held.get(run.id, []):
            if pair["benchmark"] not in shown and pair["provider"] in provider_ids:
                runs = wanted.setdefault(pair["benchmark"], {})
                runs.setdefault(provider_ids[pair["provider"]], run)
    boards = []
    for slug, by_provider in sorted(wanted.items()):
        # The version the newest held-back run measured.
        newest = max(by_provider.values(), key=lambda run: (run.published_at, str(run.id)))
        measured = Trial.objects.filter(run=newest, benchmark__slug=slug).values("benchmark_id")
        benchmark = Benchmark.objects.filter(id__in=measured[:1]).first()
        if benchmark is None:
            continue
        board = benchmark_board(benchmark, by_provider, providers, published)
        _remove_numbers(board)
        board.summary["held_back"] = held_back_rows(board, held, published, providers)
        board.summary["caveats"] = []
        for unit in board.units:
            unit["held_back"] = board.summary["held_back"]
        boards.append(board)
    return boards


def _remove_numbers(board: Board) -> None:
    """Keep the board's frame (units, stages, scope) and drop everything measured: no row, no
    cell, no trial count, no run its numbers would come from."""
    board.runs, board.cells = {}, {}
    board.summary["rows"] = []
    board.summary["sources"] = []
    board.summary["units"] = [{**u, "trial_count": 0} for u in board.summary["units"]]
    board.summary["verdicts"] = []
    for unit in board.units:
        unit["rows"], unit["cost_rows"], unit["cells"] = [], [], []
        unit["trial_count"], unit["sources"], unit["verdicts"] = 0, [], []
