"""What the system knows about a board's numbers that a reader should read beside them, said on
the benchmark page as one caveat line: the audit's physical-limit and cache flags, a working
directory in memory, region markers and substituted units. Each is already recorded (the run's
audit report, each trial's placement, the provider, the workload value); this only puts it where
readers decide."""

from __future__ import annotations

from django.db.models import Count

from boxbench.leaderboard.boards import Board
from boxbench.models import Outcome, Provider, Section, Trial

# The audit's cache_flags check fires a flag for a pair when it holds in at least this share of
# its trials (stats.audit.CACHE_SHARE; its report lists those flags).
FLAG_WORDS = {
    "flag_throughput_ceiling": "at a physical throughput ceiling",
    "flag_cached_direct_read": "direct reads served from cache",
    "flag_cpu_bound": "CPU-bound",
    "flag_throttled": "CPU throttled",
}
MEMORY_FILE_SYSTEMS = ("tmpfs", "ramfs")
MEMORY_SHARE = 0.15  # as the audit's flags: said once it holds in this share of the trials


def board_caveats(board: Board, providers: dict[int, Provider]) -> list[str]:
    """The caveats of one board, provider by provider in the board's row order."""
    by_slug = {p.slug: p for p in providers.values()}
    found: list[str] = []
    for row in board.summary["rows"]:
        slug = row["provider"]
        name = by_slug[slug].name
        run = board.runs.get(slug)
        if run is not None:
            found += [f"{name}: {words}" for words in audit_flags(run.audit_report, slug, board)]
            if board.benchmark.section == Section.MACHINE_PERFORMANCE:
                share = memory_share(run, by_slug[slug], board)
                if share >= MEMORY_SHARE:
                    found.append(
                        f"{name}: its working directory is in memory (tmpfs) in "
                        f"{_percent(share)} of trials, so disk figures measure memory"
                    )
        if row["region_marker"]:
            note = f": {row['region_note']}" if row["region_note"] else ""
            found.append(f"{name}: marked {row['region_marker']}{note}")
        found += [f"{name}: {note}" for note in row["notes"]]
    # The page joins them with " · " and ends the line with its own full stop.
    found = [caveat.rstrip(".") for caveat in found]
    return found


def audit_flags(report: dict | None, provider: str, board: Board) -> list[str]:
    """The flags the run's audit found frequent for this pair, each with its share of trials."""
    for pair in (report or {}).get("pairs", []):
        if (pair.get("provider"), pair.get("benchmark")) != (provider, board.benchmark.slug):
            continue
        details = (pair.get("checks", {}).get("cache_flags") or {}).get("details") or {}
        shares = details.get("shares") or {}
        frequent = [*details.get("page_statements", []), *details.get("notes", [])]
        return [
            f"{FLAG_WORDS[flag]} in {_percent(shares.get(flag, 0.0))} of trials (audit)"
            for flag in FLAG_WORDS
            if flag in frequent
        ]
    return []


def memory_share(run, provider: Provider, board: Board) -> float:
    """The share of the pair's successful trials whose working directory was in memory."""
    counts = (
        Trial.objects.filter(
            run=run, provider=provider, benchmark=board.benchmark, outcome=Outcome.SUCCESS
        )
        .values("placement__workdir_fs")
        .annotate(n=Count("id"))
        .order_by()
    )
    total = sum(c["n"] for c in counts)
    memory = sum(c["n"] for c in counts if c["placement__workdir_fs"] in MEMORY_FILE_SYSTEMS)
    return memory / total if total else 0.0


def _percent(share: float) -> str:
    return f"{100 * share:.0f} %"
