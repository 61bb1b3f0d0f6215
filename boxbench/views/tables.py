"""The rows of every downloadable table, built once from an aggregate and used by both the HTML
page and its CSV download (same rows, same formatting)."""

from dataclasses import dataclass, field

from django.urls import reverse

from boxbench.leaderboard.shapes import (
    BenchmarkPage,
    ComparePage,
    CompareSlice,
    UnitPage,
)
from boxbench.templatetags.boxbench_format import num, usd
from boxbench.views import rollout_columns

# Why a cell is blank, by column: the page shows it on the cell (title) and under the table.
BLANK = {
    "rank": "Not ranked: the label says why.",
    "label": "No status label: a plain ranked result.",
    "workload value": "Not ranked: the label says why.",
    "measure unit": "No value to measure: the label says why.",
    "substituted units": "Every unit completed: nothing substituted.",
    "median": "No successful trial.",
    "ci_low": "No interval: only time medians carry a 95 % interval (throughput metrics and "
    "pooled statistics do not), and it needs successful trials.",
    "tail": "No successful trial.",
    "tail kind": "No successful trial.",
    "mean": "No successful trial.",
    "stage median": "The stage has no valid value (no successful trial, or a failed clock gate).",
    "workload cost (USD)": "Not ranked, or no provider-sourced cost on every unit: the label "
    "says why.",
    "mean cost per success (USD)": "No provider-sourced cost on every successful trial (the "
    "label says Not Displayed), or no successful trial.",
    "stage cost": "No stage cost: it needs a provider-sourced cost and the stage's segment of "
    "the Time bar.",
}
BLANK["ci_high"] = BLANK["ci_low"]
BLANK["cost ci_low (USD)"] = BLANK["mean cost per success (USD)"]
BLANK["cost ci_high (USD)"] = BLANK["mean cost per success (USD)"]
BLANK["cost rank"] = BLANK["rank"]


# The page's header for a column whose CSV/API name is an id; "{unit}" is the table's measure unit.
# Ids stay in the CSV and the API, where analysts' scripts read them.
HEADERS = {
    "provider": "Provider",
    "rank": "Rank",
    "label": "Status",
    "n": "Successful trials",
    "median": "Median ({unit})",
    "ci_low": "95 % interval, low ({unit})",
    "ci_high": "95 % interval, high ({unit})",
    "tail": "Tail ({unit})",
    "tail kind": "Tail statistic",
    "mean": "Mean ({unit})",
    "measure unit": "Measured in",
    "workload value": "Workload value ({unit})",
    "substituted units": "Units substituted",
    "units": "Units covered",
    "cost rank": "Cost rank",
    "cost ci_low (USD)": "Cost 95 % interval, low (USD)",
    "cost ci_high (USD)": "Cost 95 % interval, high (USD)",
    "n a": "Successful trials, A",
    "n b": "Successful trials, B",
    "median a": "Median A",
    "median b": "Median B",
    "ratio b/a": "Ratio B/A",
    "ratio ci_low": "Ratio 95 % interval, low",
    "ratio ci_high": "Ratio 95 % interval, high",
    "run a": "Run A",
    "run b": "Run B",
}


def header(column: str, unit: str = "") -> str:
    """A column's header on the page: its human label, with the measure unit where it has one."""
    text = HEADERS.get(column, column[:1].upper() + column[1:])
    return text.replace(" ({unit})", f" ({unit})" if unit else "")


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]
    blank: dict[str, str] = field(default_factory=dict)
    measure_unit: str = ""  # the unit the value columns are in, for the page's headers
    # Cells the page shows as words with a link instead of their CSV text, such as a held-back
    # row's label: {(row, column): (words, url, link text)}.
    links: dict[tuple[int, int], tuple[str, str, str]] = field(default_factory=dict)

    def cells(self) -> list[list[tuple[str, str, tuple[str, str, str] | None]]]:
        """Each row's cells as (text, why it is blank, link or None), for the HTML page."""
        notes = [self.blank.get(c, "") for c in self.columns]
        return [
            [
                (text, "" if text else note, self.links.get((i, j)))
                for j, (text, note) in enumerate(zip(row, notes, strict=True))
            ]
            for i, row in enumerate(self.rows)
        ]

    def headers(self) -> list[str]:
        return [header(c, self.measure_unit) for c in self.columns]

    def footnotes(self) -> list[tuple[str, str]]:
        """(column header, why) for each column that has a blank cell."""
        blank_columns = {i for row in self.rows for i, text in enumerate(row) if not text}
        seen, out = set(), []
        for i in sorted(blank_columns):
            column = self.columns[i]
            why = self.blank.get(column, "")
            if why and why not in seen:
                seen.add(why)
                out.append((header(column, self.measure_unit), why))
        return out


def rank_text(value) -> str:
    return "" if value is None else str(value)


def scope_text(data: dict) -> str:
    return (data.get("unit_scope") or {}).get("text", "")


def _noted(table: Table, data: dict) -> Table:
    """A benchmark whose numbers could be mistaken for another set's says so on every row: a
    last column, `note`, so the file stays one header row and then rows."""
    note = data.get("download_note")
    if note:
        table.columns.append("note")
        for row in table.rows:
            row.append(note)
    return table


def benchmark_table(summary: BenchmarkPage, unit: UnitPage | None = None) -> Table:
    """The All view: a multi-unit workload's workload value, or a single unit's median with its
    95 % interval (from `unit`, that unit's page), and the unit they are measured in."""
    multi = summary["multi_unit"]
    intervals = {} if multi or unit is None else {r["provider"]: r for r in unit["rows"]}
    columns = ["provider", "rank", "label", "workload value" if multi else "median"]
    columns += [] if multi else ["ci_low", "ci_high"]
    columns += ["measure unit", "substituted units", "n", "units"]
    rows = []
    for r in summary["rows"]:
        shown = r["workload_value"] is not None
        found = intervals.get(r["provider"], {}) if shown else {}
        rows.append(
            [
                r["provider"],
                rank_text(r["rank"]),
                r["label"] or "",
                num(r["workload_value"]),
                *([] if multi else [num(found.get("ci_low")), num(found.get("ci_high"))]),
                summary["measure_unit"] if shown else "",
                " ".join(r["substituted_units"]),
                str(r["n"]),
                scope_text(summary),
            ]
        )
    blank = {**BLANK, "median": BLANK["workload value"]}  # the All view's median: ranked only
    if "rollouts" in summary:  # RL rollouts: what a million would take, beside each row
        columns += rollout_columns.COLUMNS
        blank.update(rollout_columns.BLANK)
        for r, row in zip(summary["rows"], rows, strict=True):
            row += rollout_columns.projection_cells(summary["rollouts"], r["provider"])
    table = Table(columns, rows, blank, summary["measure_unit"])
    table = with_held_back(table, summary, units=scope_text(summary))
    return _noted(table, summary)


def with_held_back(table: Table, page: BenchmarkPage | UnitPage, **cells: str) -> Table:
    """A provider the audit held back keeps its row in every table of its board: its label, no
    number, no rank; on the page the label reads why, with the run that says so."""
    label = table.columns.index("label")
    for r in page.get("held_back", []):
        row = dict.fromkeys(table.columns, "")
        row.update(provider=r["provider"], label=r["label"], n="0", **cells)
        url = reverse("run", args=[r["run"]])
        table.links[(len(table.rows), label)] = (r["meaning"], url, r["run_name"])
        table.rows.append(list(row.values()))
    return table


PROBE_BLANK = {
    "detected": "No reading: the last column says why.",
    "min": "No reading.",
    "max": "No reading.",
    "why no reading": "Every successful trial gave this reading.",
    "expected": "No expected answer: the reading describes the sandbox, neither right nor wrong.",
}


def probe_table(summary: BenchmarkPage) -> Table:
    """A probe benchmark's readings (Isolation): one row per probe and provider, the lower
    median over the successful trials (detected) beside the expected answer, with the range."""
    columns = ["probe", "title", "provider", "unit", "expected", "detected", "min", "max", "n"]
    columns.append("why no reading")
    rows = [
        [
            r["probe"],
            r["title"],
            r["provider"],
            r["unit"],
            r["expected"],
            num(r["median"]),
            num(r["min"]),
            num(r["max"]),
            str(r["n"]),
            r["missing"],
        ]
        for r in summary.get("probes", [])
    ]
    return Table(columns, rows, PROBE_BLANK)


def cost_ordered(summary: BenchmarkPage) -> BenchmarkPage:
    """The All view's rows as the Cost view shows them: by cost rank, then provider, each with
    its cost label (a missing provider-sourced cost labels the Cost view only)."""
    rows = sorted(
        summary["rows"],
        key=lambda r: (r.get("cost_rank") is None, r.get("cost_rank") or 0, r["provider"]),
    )
    shown = [
        {
            **r,
            "label": r.get("cost_label", r["label"]),
            "meaning": r.get("cost_meaning", r["meaning"]),
            "ranked": r["workload_cost_usd"] is not None,  # a cost bar, or its label instead
        }
        for r in rows
    ]
    return {**summary, "rows": shown}  # type: ignore[typeddict-item]


def benchmark_cost_table(summary: BenchmarkPage) -> Table:
    """The All view of the Cost view: each provider's workload cost, ranked lower first."""
    summary = cost_ordered(summary)
    stages = summary["stages"]
    columns = [
        "provider",
        "cost rank",
        "label",
        "workload cost (USD)",
        "substituted units",
        "n",
        "units",
        *[f"{stage} cost (USD)" for stage in stages],
    ]
    rows = [
        [
            r["provider"],
            rank_text(r.get("cost_rank")),
            r.get("cost_label", r["label"]) or "",
            usd(r["workload_cost_usd"]),
            " ".join(r.get("cost_substituted_units", [])),
            str(r["n"]),
            scope_text(summary),
            *[usd((r.get("stage_costs") or {}).get(stage)) for stage in stages],
        ]
        for r in summary["rows"]
    ]
    blank = {**BLANK, **{f"{stage} cost (USD)": BLANK["stage cost"] for stage in stages}}
    table = with_held_back(Table(columns, rows, blank), summary, units=scope_text(summary))
    return _noted(table, summary)


def unit_table(unit: UnitPage) -> Table:
    stages = unit["stages"]
    columns = [
        "provider",
        "rank",
        "label",
        "n",
        "median",
        "ci_low",
        "ci_high",
        "tail",
        "tail kind",
        "mean",
        "measure unit",
        *[f"{stage} median (ms)" for stage in stages],
    ]
    rows = []
    for r in unit["rows"]:
        rows.append(
            [
                r["provider"],
                rank_text(r["rank"]),
                r["label"] or "",
                str(r["n"]),
                num(r["median"]),
                num(r["ci_low"]),
                num(r["ci_high"]),
                num(r["tail"]),
                r["tail_kind"] or "",
                num(r["mean"]),
                unit["measure_unit"] if r["n"] else "",
                *[num(r["stage_medians"].get(stage)) for stage in stages],
            ]
        )
    blank = {**BLANK, **{f"{stage} median (ms)": BLANK["stage median"] for stage in stages}}
    table = Table(columns, rows, blank, unit["measure_unit"])
    return _noted(with_held_back(table, unit), unit)


def unit_cost_table(unit: UnitPage) -> Table:
    """The Cost view of a unit: the mean cost per success and each stage's cost (the unscaled
    figures the bar's labels show), ranked lower first."""
    stages = unit["stages"]
    columns = [
        "provider",
        "rank",
        "label",
        "n",
        "mean cost per success (USD)",
        "cost ci_low (USD)",
        "cost ci_high (USD)",
        *[f"{stage} cost (USD)" for stage in stages],
    ]
    rows = []
    for r in unit["cost_rows"]:
        costs = {s["stage"]: s["cost"] for s in (r["stage_costs"] or {}).get("segments", [])}
        rows.append(
            [
                r["provider"],
                rank_text(r["rank"]),
                r["label"] or "",
                str(r["n"]),
                usd(r["mean_cost_usd"]),
                usd(r.get("cost_ci_low")),
                usd(r.get("cost_ci_high")),
                *[usd(costs.get(stage)) for stage in stages],
            ]
        )
    blank = {**BLANK, **{f"{stage} cost (USD)": BLANK["stage cost"] for stage in stages}}
    return _noted(with_held_back(Table(columns, rows, blank), unit), unit)


ATTEMPT_OUTCOMES = ("provider_failure", "benchmark_error", "excluded", "missed")


def attempts_table(unit: UnitPage) -> Table:
    """Each provider's attempts on the unit counted by outcome: what the public may know of the
    unsuccessful ones (their trials, owners, causes and costs are private evidence)."""
    columns = ["provider", "success", *ATTEMPT_OUTCOMES, "unreplaced provider failures"]
    rows = [
        [
            r["provider"],
            *(str(r["outcomes"].get(o, 0)) for o in ("success", *ATTEMPT_OUTCOMES)),
            str(r["unreplaced_failures"]),
        ]
        for r in unit["rows"]
        if r["outcomes"]
    ]
    return Table([c.replace("_", " ") for c in columns], rows)


def compare_table(page: ComparePage | CompareSlice) -> Table:
    """Two providers side by side: per benchmark, unit and series, both medians, the ratio b/a
    with its 95 % interval, the detectable difference and the verdict."""
    columns = [
        "benchmark",
        "unit",
        "series",
        "measure unit",
        "n a",
        "n b",
        "median a",
        "median b",
        "ratio b/a",
        "ratio ci_low",
        "ratio ci_high",
        "detectable difference (%)",
        "verdict",
        "run a",
        "run b",
        "caveats",
    ]
    rows = [
        [
            r["benchmark"],
            r["unit"],
            r["stage"] or "total",
            r["measure_unit"],
            str(r["n_a"]),
            str(r["n_b"]),
            num(r["median_a"]),
            num(r["median_b"]),
            ratio(r["ratio"]),
            ratio(r["ci_low"]),
            ratio(r["ci_high"]),
            num(r["detectable_percent"]),
            r["text"],
            r["run_a"],
            r["run_b"],
            "; ".join(r.get("caveats", [])),
        ]
        for r in page["rows"]
    ]
    blank = {
        "ratio b/a": "Not comparable: the verdict says why.",
        "ratio ci_low": "Not comparable: the verdict says why.",
        "ratio ci_high": "Not comparable: the verdict says why.",
        "detectable difference (%)": "Not comparable, or too few trials (or no spread) for "
        "any difference to be detectable.",
    }
    return Table(columns, rows, blank)


def ratio(value) -> str:
    return "" if value is None else f"{value:.4f}"
