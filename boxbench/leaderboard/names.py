"""How the run page names a pair: light, so a view can read it without loading the statistics
(the leaderboard's heavier modules bring pandas and scipy)."""

from __future__ import annotations

from boxbench.leaderboard.shapes.readers import PairNames
from boxbench.models import Benchmark, Provider


def pair_names() -> PairNames:
    """Provider names and benchmark titles by slug, as the boards name a pair; the slugs stay
    in the CSV, the API and the commands shown to staff. Two queries: a published run page
    reads them from its aggregate instead."""
    titles = Benchmark.objects.order_by("slug", "id").values_list("slug", "title")
    return {
        "providers": dict(Provider.objects.values_list("slug", "name")),
        "benchmarks": dict(titles),  # the newest version's title comes last and wins
    }
