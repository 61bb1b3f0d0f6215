"""The rows of every downloadable table, built once from an aggregate and used by both the HTML
page and its CSV download (same rows, same formatting)."""

from dataclasses import dataclass

from boxbench.templatetags.boxbench_format import num, score


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]


def _rank(value) -> str:
    return "" if value is None else str(value)


def _scope(data: dict) -> str:
    return (data.get("unit_scope") or {}).get("text", "")


def benchmark_table(summary: dict) -> Table:
    columns = ["provider", "rank", "label", "workload value", "substituted units", "n", "units"]
    rows = [
        [
            r["provider"],
            _rank(r["rank"]),
            r["label"] or "",
            num(r["workload_value"]),
            " ".join(r["substituted_units"]),
            str(r["n"]),
            _scope(summary),
        ]
        for r in summary["rows"]
    ]
    return Table(columns, rows)


def unit_table(unit: dict) -> Table:
    stages = unit["stages"]
    columns = [
        "provider", "rank", "label", "n", "median", "ci_low", "ci_high", "tail", "tail kind",
        "mean", *[f"{stage} median" for stage in stages],
    ]  # fmt: skip
    rows = []
    for r in unit["rows"]:
        rows.append(
            [
                r["provider"], _rank(r["rank"]), r["label"] or "", str(r["n"]), num(r["median"]),
                num(r["ci_low"]), num(r["ci_high"]), num(r["tail"]), r["tail_kind"] or "",
                num(r["mean"]), *[num(r["stage_medians"].get(stage)) for stage in stages],
            ]
        )  # fmt: skip
    return Table(columns, rows)


def score_rows(overview: dict) -> list[dict]:
    """The score tree flattened depth first: one entry per node, with each provider's score."""
    tree = overview["tree"]
    titles = overview["benchmarks"]
    out = []

    def walk(node, path, depth):
        label = node["label"]
        if node["level"] == "benchmark":
            label = titles.get(node["key"], {}).get("title", node["key"])
        elif node["level"] == "unit":
            label = titles.get(path[-1], {}).get("units", {}).get(node["key"], node["key"])
        source = titles.get(path[-1] if node["level"] == "unit" else node["key"], {})
        out.append(
            {
                "level": node["level"],
                "key": node["key"],
                "path": "/".join([*path, node["key"]]),
                "label": label,
                "depth": depth,
                "benchmark": path[-1] if node["level"] == "unit" else node["key"],
                "unit": node["key"] if node["level"] == "unit" else "",
                "run": source.get("run", "") if node["level"] in ("benchmark", "unit") else "",
                "image_digest": source.get("image_digest", "")
                if node["level"] in ("benchmark", "unit")
                else "",
                "units": _scope(source) if node["level"] in ("benchmark", "unit") else "",
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


def score_table(overview: dict) -> Table:
    columns = [
        "level", "node", "label", "provider", "score", "rank", "run", "image digest", "units",
    ]  # fmt: skip
    rows = []
    for node in score_rows(overview):
        for provider, value, rank in node["ranking"]:
            rows.append(
                [
                    node["level"], node["path"], node["label"], provider, score(value),
                    str(rank), node["run"], node["image_digest"], node["units"],
                ]
            )  # fmt: skip
    return Table(columns, rows)
