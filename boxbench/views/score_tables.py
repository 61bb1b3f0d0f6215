"""The overview's score tree as rows: the page's folded tree and scores.csv (same rows)."""

from typing import Any

from boxbench.leaderboard.shapes import OverviewPage
from boxbench.templatetags.boxbench_format import num, score
from boxbench.views.tables import BLANK, Table, rank_text, scope_text


def score_rows(overview: OverviewPage) -> list[dict]:
    """The score tree flattened depth first: one entry per node, with each provider's score."""
    tree = overview["tree"]
    titles: dict[str, Any] = dict(overview["benchmarks"])
    out = []

    def walk(node, path, depth):
        label = node["label"]
        if node["level"] == "benchmark":
            label = titles.get(node["key"], {}).get("title", node["key"])
        elif node["level"] == "unit":
            label = titles.get(path[-1], {}).get("units", {}).get(node["key"], node["key"])
        source = titles.get(path[-1] if node["level"] == "unit" else node["key"], {})
        measured = node["level"] in ("benchmark", "unit")
        out.append(
            {
                "level": node["level"],
                "key": node["key"],
                "path": "/".join([*path, node["key"]]),
                "label": label,
                "depth": depth,
                "benchmark": path[-1] if node["level"] == "unit" else node["key"],
                "unit": node["key"] if node["level"] == "unit" else "",
                # Each provider's own run: a re-run of one pair feeds that provider only.
                "sources": source.get("sources", []) if measured else [],
                "provider_runs": source.get("provider_runs", {}) if measured else {},
                "units": scope_text(source) if measured else "",
                "results": _node_results(source.get("results"), node, path[:1]),
                "ranking": sorted(
                    ((p, node["scores"][p], node["ranks"][p]) for p in node["scores"]),
                    key=lambda item: (item[2], item[0]),
                ),
            }
        )
        for child in node["children"]:
            walk(child, [*path, node["key"]] if node["level"] != "overall" else [], depth + 1)

    walk(tree, [], 0)
    return out


def _node_results(results: dict | None, node: dict, section: list[str]) -> dict:
    """A benchmark or unit node's rows beside its scores: {"statistic", "measure_unit", "rows":
    {provider: ResultRow}}; empty for a section, the overall, a page from before them, and the
    Workload Cost section, whose scores come from costs the rows do not hold."""
    if not results or node["level"] not in ("benchmark", "unit") or section == ["workload_cost"]:
        return {}
    unit = node["level"] == "unit"
    rows = results["units"].get(node["key"], []) if unit else results["rows"]
    return {
        "statistic": "median" if unit else results["statistic"],
        "measure_unit": results["measure_unit"],
        "rows": {r["provider"]: r for r in rows},
    }


SCORE_BLANK = {
    "score": "No score: the provider has no ranked result under this node (the status says why).",
    "rank": "No score: the provider has no ranked result under this node (the status says why).",
    "status": "No status label: a plain ranked result, or a section's score.",
    "value": "No value: not ranked on a workload, or no successful trial (the status says why).",
    "ci_low": BLANK["ci_low"],
    "ci_high": BLANK["ci_low"],
}


def score_table(overview: OverviewPage) -> Table:
    """The score tree with, per benchmark and unit, every provider the board lists (ranked or
    not, with its status label), its value with the unit and the median's interval, and the run
    its numbers come from."""
    columns = ["level", "node", "title", "provider", "score", "rank", "status", "statistic"]
    columns += ["value", "measure unit", "ci_low", "ci_high", "n", "run", "image digest", "units"]
    rows = []
    for node in score_rows(overview):
        scored = {p: (value, rank) for p, value, rank in node["ranking"]}
        results = node["results"].get("rows", {})
        # Every provider the board lists, also those without a score: their label says why.
        unscored = sorted(set(results) - set(scored))
        for provider in [p for p, _, _ in node["ranking"]] + unscored:
            value, rank = scored.get(provider, (None, None))
            found = results.get(provider, {})
            source = node["provider_runs"].get(provider) or found
            status = found.get("label") or ""
            rows.append(
                [
                    node["level"],
                    node["path"],
                    node["label"],
                    provider,
                    "" if value is None else score(value),
                    rank_text(rank),
                    status,
                    node["results"].get("statistic", "") if found else "",
                    num(found.get("value")),
                    node["results"].get("measure_unit", "") if found else "",
                    num(found.get("ci_low")),
                    num(found.get("ci_high")),
                    str(found["n"]) if found else "",
                    source.get("run", ""),
                    source.get("image_digest", ""),
                    node["units"],
                ]
            )
    return Table(columns, rows, SCORE_BLANK)
