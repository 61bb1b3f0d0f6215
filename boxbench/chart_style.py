"""The charts' shared look: provider and stage colours, fonts, the legend's place, the base
layout and how text reaches plotly (escaped, titles wrapped to a phone's width)."""

import html
from typing import Any

# Providers: one colour each, the same on every chart (see provider_colour).
PALETTE = [
    "#4C78A8",
    "#F58518",
    "#54A24B",
    "#B279A2",
    "#E45756",
    "#72B7B2",
    "#EECA3B",
    "#9D755D",
    "#FF9DA6",
    "#BAB0AC",
]
# Stages: a separate, muted palette, so a stage segment is never mistaken for a provider.
STAGE_PALETTE = ["#8DA0CB", "#FC8D62", "#66C2A5", "#E78AC3", "#A6D854", "#FFD92F", "#E5C494"]
FONT = {"family": "system-ui, sans-serif", "size": 13}


def provider_colour(row: dict) -> str:
    """The provider's colour: fixed by its colour_index (the provider's registration order, set
    when the leaderboard is materialized), so a provider looks the same on every chart and page.
    Pages materialized before the index existed fall back to the slug's characters."""
    index = row.get("colour_index")
    if index is None:
        index = sum(ord(c) for c in row.get("provider", ""))
    return PALETTE[index % len(PALETTE)]


def plain(text: str) -> str:
    """A title without the Markdown backticks some unit titles carry (`true`)."""
    return str(text).replace("`", "")


LEGEND_BELOW = {
    "orientation": "h",
    "yref": "container",
    "y": 0,
    "yanchor": "bottom",
    "traceorder": "normal",
}


# What a 400 px phone shows of one title line (15 px) and of one subtitle line (plotly's <sub>,
# about 11 px) with the chart's margins: plotly never wraps a title, it cuts it at both ends.
TITLE_CHARS = 44
SUBTITLE_CHARS = 58
LINE_PX = 17


def layout(title: str, height: int, **extra: Any) -> dict[str, Any]:
    """The base layout; the title's lines are wrapped to a phone's width, and the top margin
    grows by a line for each line the wrapping adds."""
    wrapped, added = wrap_title(title)
    figure: dict[str, Any] = {
        # Hung from the figure's top: a centred title's added lines would run into the plot.
        "title": {
            "text": wrapped,
            "font": {"size": 15},
            "yref": "container",
            "y": 1,
            "yanchor": "top",
            "pad": {"t": 20},
        },
        "height": height + LINE_PX * added,
        # automargin widens the margins to fit every provider name: none is ever cut.
        "margin": {"l": 10, "r": 20, "t": 50, "b": 50},
        "font": FONT,
        "plot_bgcolor": "white",
        "showlegend": True,
        # At the figure's bottom, not a share of the plot's height below it: under a short plot
        # that share put the legend on the axis title.
        "legend": LEGEND_BELOW,
    }
    figure.update(extra)
    figure["margin"] = {**figure["margin"], "t": figure["margin"]["t"] + LINE_PX * added}
    for axis in ("xaxis", "yaxis"):
        figure.setdefault(axis, {})["automargin"] = True
    return figure


def wrap_title(title: str) -> tuple[str, int]:
    """(title with <br> between words where a line would pass a phone's width, lines added).

    The main title and its <sub> part are wrapped at their own widths; line breaks the caller
    wrote are kept."""
    main, _, sub = title.partition("<sub>")
    sub = sub.removesuffix("</sub>")
    lines_main, added_main = _wrap(main, TITLE_CHARS)
    if not sub:
        return lines_main, added_main
    lines_sub, added_sub = _wrap(sub, SUBTITLE_CHARS)
    return f"{lines_main}<sub>{lines_sub}</sub>", added_main + added_sub


def _wrap(text: str, width: int) -> tuple[str, int]:
    out: list[str] = []
    added = 0
    for part in text.split("<br>"):
        line = ""
        for word in part.split(" "):
            if line and len(line) + 1 + len(word) > width:
                out.append(line)
                added += 1
                line = word
            else:
                line = f"{line} {word}" if line else word
        out.append(line)
    return "<br>".join(out), added


def chart_text(text: str) -> str:
    """A name as plotly draws it: its pseudo-HTML (links, tags) escaped, so an imported name
    is text on the chart, never a link. Names never go into a hovertemplate, which is parsed;
    a template names its trace with %{fullData.name} instead."""
    return html.escape(str(text), quote=False)
