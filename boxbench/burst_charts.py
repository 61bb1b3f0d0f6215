"""The Burst board's pictures from what publication stored (boxbench.leaderboard.burst): the
ready-count curve of the chosen tier per provider, and the tier sweep (throughput and 95 % ready
time by tier) that shows each provider's knee. Layout only: the data is a BurstCharts
(boxbench.leaderboard.shapes.burst), computed when the board was published."""

from boxbench.chart_style import FONT, LEGEND_BELOW, chart_text, provider_colour


def ready_curve_chart(charts: dict, tier: str) -> dict | None:
    """Mean ready sandboxes against seconds from the burst's start, one step line per provider;
    None when no provider has a successful burst of the tier."""
    curves = charts["curves"].get(tier, [])
    if not curves:
        return None
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "line": {"shape": "hv", "color": provider_colour(c)},
            "name": chart_text(c["provider_name"]),
            "x": [ms / 1000 for ms in c["ms"]],
            "y": c["ready"],
            "hovertemplate": "%{fullData.name}: %{y:.1f} ready at %{x:.2f} s<extra></extra>",
        }
        for c in curves
    ]
    title = f"Ready sandboxes against time, {tier} at once<br><sub>mean over the bursts</sub>"
    return {"data": data, "layout": _layout(title, "s from the burst's start", "ready sandboxes")}


def sweep_chart(charts: dict, measure: str) -> dict | None:
    """One line per provider across the tiers it ran: `measure` is "throughput_per_s" or
    "p95_ready_ms"; None when no provider has a measured tier."""
    data = []
    for row in charts["sweep"]:
        points = [p for p in row["points"] if p[measure] is not None]
        if not points:
            continue
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "line": {"color": provider_colour(row)},
                "name": chart_text(row["provider_name"]),
                "x": [p["tier"] for p in points],
                "y": [p[measure] for p in points],
                "hovertemplate": "%{fullData.name}: %{y:.4g} at tier %{x}<extra></extra>",
            }
        )
    if not data:
        return None
    if measure == "throughput_per_s":
        title, axis = (
            "Throughput by tier<br><sub>ready sandboxes per second, higher is better</sub>",
            "ready per s",
        )
    else:
        title, axis = "Time until 95 % ready, by tier<br><sub>ms, lower is better</sub>", "ms"
    layout = _layout(title, "concurrent creates (tier)", axis)
    tiers = sorted({x for trace in data for x in trace["x"]})
    layout["xaxis"].update(type="log", tickvals=tiers, ticktext=[str(t) for t in tiers])
    return {"data": data, "layout": layout}


def _layout(title: str, x_title: str, y_title: str) -> dict:
    return {
        "title": {"text": title, "font": {"size": 15}},
        "height": 380,
        "margin": {"l": 10, "r": 20, "t": 60, "b": 50},
        "font": FONT,
        "plot_bgcolor": "white",
        "showlegend": True,
        "legend": LEGEND_BELOW,
        "xaxis": {"title": {"text": x_title}, "automargin": True, "gridcolor": "#eee"},
        "yaxis": {
            "title": {"text": y_title},
            "automargin": True,
            "gridcolor": "#eee",
            "rangemode": "tozero",
        },
    }


def burst_context(summary: dict, tier: str) -> dict:
    """What the benchmark page adds for the Burst board (and the limits for Density)."""
    context: dict = {"limits": summary.get("limits", [])}
    charts = summary.get("burst")
    if charts:
        context.update(
            burst=charts,
            ready_chart=ready_curve_chart(charts, tier),
            throughput_chart=sweep_chart(charts, "throughput_per_s"),
            p95_chart=sweep_chart(charts, "p95_ready_ms"),
            chosen_tier=tier,
            tiers=sorted((u["slug"] for u in summary["units"]), key=int),
        )
    return context
