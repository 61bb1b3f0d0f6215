"""The history chart of a benchmark unit's results series: one line per series, one point per
published run with its 95 % interval, each point linking to its run (layout only; the numbers
are materialized, boxbench.leaderboard.history)."""

import math
from datetime import datetime, timedelta

from boxbench.chart_style import chart_text, plain, provider_colour
from boxbench.chart_style import layout as _layout
from boxbench.leaderboard.shapes import HistoryPage
from boxbench.templatetags.boxbench_format import num, short

DAY_MS = 86_400_000
MAX_TICK_GAPS = 3  # between dated ticks on the x axis


def series_name(series: dict) -> str:
    """A series as a reader tells it apart: the provider, and the image when it has several."""
    name = f"{series['provider_name']} · image {short(series['image_digest']) or 'not recorded'}"
    return chart_text(name)


def history_chart(history: HistoryPage, unit: str) -> dict | None:
    traces = []
    measure = history["measure_unit"]
    for series in history["series"]:
        points = [p for p in series["points"] if p["unit"] == unit and p["median"] is not None]
        if not points:
            continue
        has_interval = any(p["ci_low"] is not None for p in points)
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": series_name(series),
                "x": [p["published_at"] for p in points],
                "y": [p["median"] for p in points],
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "visible": has_interval,
                    "array": [_minus(p["ci_high"], p["median"]) for p in points],
                    "arrayminus": [_minus(p["median"], p["ci_low"]) for p in points],
                },
                # Clicking a point opens its run (dashboard.js reads the address from here).
                "customdata": [
                    [f"/runs/{p['run']}/", chart_text(p["run_name"]), num(p["median"])]
                    for p in points
                ],
                "hovertemplate": "%{customdata[1]}: median %{customdata[2]} "
                f"{measure}<extra></extra>",
                "marker": {"color": provider_colour(series), "size": 8},
                "line": {"color": provider_colour(series)},
            }
        )
    if not traces:
        return None
    better = "lower" if history["lower_is_better"] else "higher"
    # Two short lines: one long subtitle was cut at both ends on a phone.
    title = (
        f"History of {plain(unit)}: median per published run<br><sub>{measure}, {better} is "
        "better; one line per results series;<br>click a point to open its run</sub>"
    )
    published = sorted(x for trace in traces for x in trace["x"])
    start, end = _days_from(published[0], -1), _days_from(published[-1], 1)
    layout = _layout(
        title,
        440,
        margin={"l": 10, "r": 20, "t": 80, "b": 50},
        xaxis={
            "title": {"text": "published"},
            "type": "date",
            "gridcolor": "#eee",
            # Dates, level: runs published minutes apart drew sub-second ticks that collided.
            "tickformat": "%Y-%m-%d",
            "tickangle": 0,
            "dtick": tick_days(start, end) * DAY_MS,
            "range": [start, end],
        },
        yaxis={"title": {"text": measure}, "gridcolor": "#eee"},
    )
    return {"data": traces, "layout": layout}


def tick_days(start: str, end: str) -> int:
    """Whole days between dated ticks, so the axis has at most three gaps between them. A date
    label is about 76 px wide, and on a 400 px phone the plot is about 300 px: with only nticks
    set, Plotly put ticks 12 hours apart on one run's two-day range, 74 px apart, and the labels
    of neighbouring ticks overlapped."""
    span = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    return max(1, math.ceil(span / timedelta(days=1) / MAX_TICK_GAPS))


def _days_from(moment: str, days: int) -> str:
    return (datetime.fromisoformat(moment) + timedelta(days=days)).isoformat()


def _minus(a, b):
    return None if a is None or b is None else a - b
