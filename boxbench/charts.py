"""Plotly figure dicts built from materialized aggregates (no statistics here, only layout).

Plain dicts rather than plotly.graph_objects: building a graph object validates every property
and costs milliseconds per request, while the browser's plotly.js validates anyway.
"""

from collections.abc import Mapping, Sequence

from boxbench.chart_style import (
    LEGEND_BELOW,
    STAGE_PALETTE,
    chart_text,
    plain,
    provider_colour,
)
from boxbench.chart_style import layout as _layout
from boxbench.leaderboard.shapes import BenchmarkPage, Headline, OverviewPage, UnitPage
from boxbench.templatetags.boxbench_format import num, usd


def nothing_to_chart(rows: Sequence[Mapping[str, object]]) -> str:
    """Why a chart has no bar: each provider's status label and what it means."""
    reasons = {}
    for row in rows:
        if row.get("label"):
            reasons.setdefault((row["label"], row["meaning"]), []).append(row["provider_name"])
    if not reasons:
        return "No provider has a ranked result here yet."
    return " ".join(
        f"{', '.join(names)}: {label}. {meaning}" for (label, meaning), names in reasons.items()
    )


def _provider_label(row: dict) -> str:
    marker = row.get("region_marker")
    return chart_text(f"{row['provider_name']} ({marker})" if marker else row["provider_name"])


def _status_annotations(rows: list[dict], x_axis_title: str) -> list[dict]:
    """A status label drawn where the bar would be, with its meaning on hover."""
    return [
        {
            "x": 0,
            "y": _provider_label(r),
            "xref": "x",
            "yref": "y",
            "xanchor": "left",
            "text": f"<i>{r['label']}</i>",
            "showarrow": False,
            "hovertext": r["meaning"],
            "font": {"color": "#666"},
            "name": "status",
        }
        for r in rows
        if r.get("label") and not _has_bar(r)
    ]


def _has_bar(row: dict) -> bool:
    return bool(row.get("ranked"))


def _categories(rows: list[dict]) -> list[str]:
    # Reversed: plotly draws the first category at the bottom of a horizontal chart.
    return [_provider_label(r) for r in reversed(rows)]


def _stage_traces(barred: list[tuple[dict, list[dict]]], stages, label: str, fmt, hover) -> list:
    """One bar trace per stage across the barred rows: each segment's `width` plotted, its
    `label` value written on it (the unscaled figure, while the widths fill the bar)."""
    traces = []
    for i, stage in enumerate(stages):
        with_stage = [
            (r, s) for r, segments in barred for s in segments if s["stage"] == stage and s["width"]
        ]
        if not with_stage:
            continue
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": chart_text(stage),
                "y": [_provider_label(r) for r, _ in with_stage],
                "x": [s["width"] for _, s in with_stage],
                "text": [fmt(s[label]) for _, s in with_stage],
                "textposition": "inside",
                "insidetextanchor": "middle",
                "customdata": [hover(r, s) for r, s in with_stage],
                "hovertemplate": (
                    "%{fullData.name}: %{customdata[0]}<br>%{customdata[1]}<extra></extra>"
                ),
                "marker": {"color": STAGE_PALETTE[i % len(STAGE_PALETTE)]},
            }
        )
    return traces


def _bars_layout(title: str, axis: str, rows: list[dict], measure: str, **extra) -> dict:
    """Horizontal bars, one row per provider in table order, a status label where a bar is not."""
    return _layout(
        title,
        120 + 45 * len(rows),
        xaxis={"title": {"text": axis}, "gridcolor": "#eee"},
        yaxis={"categoryorder": "array", "categoryarray": _categories(rows), "type": "category"},
        annotations=_status_annotations(rows, measure),
        **extra,
    )


def _provider_bars(name: str, barred: list[dict], x: list, text: list[str], hover: str) -> dict:
    """One bar per provider in its colour, its value written white at the bar's base."""
    return {
        "type": "bar",
        "orientation": "h",
        "name": name,
        "y": [_provider_label(r) for r in barred],
        "x": x,
        "text": text,
        # Labels at the bar's base keep clear of the interval whisker at its end.
        "textposition": "inside",
        "insidetextanchor": "start",
        "textfont": {"color": "white"},
        "hovertemplate": hover,
        "marker": {"color": [provider_colour(r) for r in barred]},
    }


def stacked_stage_bars(unit: UnitPage) -> dict | None:
    """One horizontal bar per ranked provider; segment widths fill the total median, while each
    segment's label shows its own unscaled stage median."""
    rows = unit["rows"]
    barred = [(r, r["segments"]) for r in rows if _has_bar(r) and r["segments"]]
    if not barred:
        return None
    measure = unit["measure_unit"]

    def hover(row, segment):
        return [
            f"median {num(segment['median'])} {measure}",
            f"total median {num(row['median'])} {measure}",
        ]

    traces = _stage_traces(barred, unit["stages"], "median", num, hover)
    title = (
        f"Stage medians of {plain(unit['unit_title'])} ({measure})<br><sub>bars fill the total "
        "median; labels show each stage's own median</sub>"
    )
    layout = _bars_layout(title, f"total median ({measure})", rows, measure, barmode="stack")
    return {"data": traces, "layout": layout}


def stacked_cost_bars(unit: UnitPage) -> dict | None:
    """The Cost view: one bar per ranked provider with a provider-sourced cost, its mean cost per
    success split by the stage means (stats.bars.stage_costs): the stage costs fill the shown
    cost, each label its segment's width. None without such a provider (nothing_to_chart says
    why, from the cost rows' labels)."""
    rows = unit["cost_rows"]
    barred = [(r, r["stage_costs"]["segments"]) for r in rows if _has_bar(r) and r["stage_costs"]]
    if not barred:
        return None

    def hover(row, segment):
        return [
            f"{usd(segment['cost'])} USD",
            f"mean cost per success {usd(row['mean_cost_usd'])} USD",
        ]

    traces = _stage_traces(barred, unit["stages"], "cost", usd, hover)
    title = (
        f"Stage costs of {plain(unit['unit_title'])} (USD)<br><sub>bars fill the mean cost per "
        "success, split by the stage means; labels show each stage's cost</sub>"
    )
    layout = _bars_layout(title, "mean cost per success (USD)", rows, "USD", barmode="stack")
    return {"data": traces, "layout": layout}


def metric_bars(unit: UnitPage) -> dict | None:
    """The median of the metric per ranked provider, with its 95 % interval; None without a
    ranked provider (the page says why: nothing_to_chart)."""
    rows = unit["rows"]
    barred = [r for r in rows if _has_bar(r)]
    if not barred:
        return None
    measure = unit["measure_unit"]
    trace = {
        **_provider_bars(
            "median",
            barred,
            [r["median"] for r in barred],
            [num(r["median"]) for r in barred],
            f"median %{{x}} {measure}<extra></extra>",
        ),
        "constraintext": "inside",
        "error_x": {
            "type": "data",
            "symmetric": False,
            "array": [_minus(r["ci_high"], r["median"]) for r in barred],
            "arrayminus": [_minus(r["median"], r["ci_low"]) for r in barred],
            "color": "#333",
            # Only a time median carries an interval: no whiskers for throughput metrics.
            "visible": any(r["ci_low"] is not None for r in barred),
        },
    }
    better = "lower" if unit["lower_is_better"] else "higher"
    interval = " with 95 % interval" if trace["error_x"]["visible"] else ""
    title = f"{unit['metric']} median{interval}<br><sub>{measure}, {better} is better</sub>"
    layout = _bars_layout(title, measure, rows, measure, showlegend=False)
    return {"data": [trace], "layout": layout}


def _minus(a, b):
    return None if a is None or b is None else a - b


def workload_bars(summary: BenchmarkPage, view: str = "time") -> dict | None:
    """The All view: each provider's workload value (view "time") or workload cost ("cost"), the
    geometric mean over the unit set; None when no provider has one (the page says why:
    nothing_to_chart)."""
    rows = summary["rows"]
    if view == "cost":
        key, substituted, measure, fmt = "workload_cost_usd", "cost_substituted_units", "USD", usd
    else:
        key, substituted, measure, fmt = (
            "workload_value",
            "substituted_units",
            summary["measure_unit"],
            num,
        )
    barred = [r for r in rows if _has_bar(r) and r[key] is not None]
    if not barred:
        return None
    what = "workload cost" if view == "cost" else "workload value"
    of = "unit mean costs per success" if view == "cost" else "unit medians"
    trace = _provider_bars(
        what,
        barred,
        [r[key] for r in barred],
        [fmt(r[key]) + (" *" if r.get(substituted) else "") for r in barred],
        f"{what} %{{x}} {measure}<extra></extra>",
    )
    scope = summary.get("unit_scope") or {}
    covered = scope["text"] if scope.get("subset") else "All units"
    title = (
        f"{covered}: {what} ({measure})<br><sub>geometric mean of {of}; * a substituted unit</sub>"
    )
    layout = _bars_layout(title, measure, rows, measure, showlegend=False)
    return {"data": [trace], "layout": layout}


def distribution(unit: UnitPage) -> dict | None:
    """Per-trial values per provider: a nearest-rank box with every (or evenly sampled) trial."""
    rows = [r for r in unit["rows"] if r["distribution"]]
    if not rows:
        return None
    traces = []
    for i, row in enumerate(rows):
        d = row["distribution"]
        color = provider_colour(row)
        traces.append(
            {
                "type": "box",
                "name": _provider_label(row),
                "x": [i],
                "q1": [d["p25"]],
                "median": [d["p50"]],
                "q3": [d["p75"]],
                "lowerfence": [d["min"]],
                "upperfence": [d["max"]],
                "width": 0.5,
                "marker": {"color": color},
                "hoverinfo": "y",
                "showlegend": False,
            }
        )
        count = len(d["points"])
        # A fixed golden-ratio jitter: deterministic, so screenshots and tests are repeatable.
        offsets = [0.35 * (((j * 0.618034) % 1.0) - 0.5) for j in range(count)]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{_provider_label(row)} trials",
                "x": [round(i + o, 4) for o in offsets],  # 4 places: a tenth of a pixel
                "y": d["points"],
                "marker": {"color": color, "size": 5, "opacity": 0.55},
                "hovertemplate": "%{y}<extra></extra>",
                "showlegend": False,
            }
        )
    layout = _layout(
        f"Per-trial {unit['metric']} ({unit['measure_unit']}) of successful trials",
        420,
        xaxis={
            "tickvals": list(range(len(rows))),
            "ticktext": [_provider_label(r) for r in rows],
            "range": [-0.6, len(rows) - 0.4],
        },
        yaxis={"title": {"text": unit["measure_unit"]}, "gridcolor": "#eee", "rangemode": "tozero"},
    )
    return {"data": traces, "layout": layout}


def score_chart(overview: OverviewPage) -> dict | None:
    """The score tree's top: each provider's overall and section scores (0 to 100), one bar per
    provider in each row, providers in overall rank order."""
    tree = overview["tree"]
    nodes = [tree, *[c for c in tree["children"] if c["scores"]]]
    if not tree["scores"]:
        return None
    ranked = sorted(tree["scores"], key=lambda p: (tree["ranks"][p], p))
    infos = overview["providers"]
    labels = ["Overall", *[n["label"] for n in nodes[1:]]]
    traces = []
    # Plotly stacks a group's bars from the bottom: the worst first puts the best on top, and
    # the reversed legend lists the best first, as the table's columns.
    for slug in reversed(ranked):
        info = infos.get(slug, {"provider": slug, "provider_name": slug})
        values = [n["scores"].get(slug) for n in nodes]
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": _provider_label(info),
                "y": labels,
                "x": values,
                "text": [score_text(v) for v in values],
                "textposition": "inside",
                "insidetextanchor": "start",
                "textfont": {"color": "white"},
                "hovertemplate": "%{fullData.name}: %{x:.1f}<extra></extra>",
                "marker": {"color": provider_colour(info)},
            }
        )
    unscored = ", ".join(c["label"] for c in tree["children"] if not c["scores"])  # no bar
    layout = _layout(
        "Scores by section<br><sub>0 to 100, higher is better; a missing result scores 0"
        + (f";<br>not scored by anyone: {unscored}" if unscored else "")
        + "</sub>",
        140 + 22 * len(nodes) * len(ranked) + 24 * len(ranked),
        barmode="group",
        xaxis={"title": {"text": "score"}, "range": [0, 100], "gridcolor": "#eee"},
        yaxis={
            "categoryorder": "array",
            "categoryarray": list(reversed(labels)),
            "type": "category",
        },
        legend={**LEGEND_BELOW, "traceorder": "reversed"},
    )
    return {"data": traces, "layout": layout}


def score_text(value) -> str:
    return "" if value is None else f"{value:.1f}"


def headline_bars(headline: Headline) -> dict | None:
    """A section's headline benchmark: each ranked provider's median (with its 95 % interval
    where it has one) or workload value; a status label where a bar is not."""
    rows = headline["rows"]
    barred = [r for r in rows if _has_bar(r) and r["value"] is not None]
    if not barred:
        return None
    measure = headline["measure_unit"]
    intervals = any(r["ci_low"] is not None for r in barred)
    trace = {
        **_provider_bars(
            headline["value_kind"],
            barred,
            [r["value"] for r in barred],
            [num(r["value"]) for r in barred],
            f"{headline['value_kind']} %{{x}} {measure}<extra></extra>",
        ),
        "constraintext": "inside",
        "error_x": {
            "type": "data",
            "symmetric": False,
            "array": [_minus(r["ci_high"], r["value"]) for r in barred],
            "arrayminus": [_minus(r["value"], r["ci_low"]) for r in barred],
            "color": "#333",
            "visible": intervals,
        },
    }
    better = "lower" if headline["lower_is_better"] else "higher"
    interval = " with 95 % interval" if intervals else ""
    title = (
        f"{headline['section_label']}: {plain(headline['title'])}<br><sub>"
        f"{headline['value_kind']}{interval}, {measure}, {better} is better</sub>"
    )
    layout = _bars_layout(title, measure, rows, measure, showlegend=False)
    return {"data": [trace], "layout": layout}
