"""Which plotly.js bundle a page loads: the smallest that draws every trace type on it.

The full plotly.js is 4.8 MB; a reader of the overview needs only bars and lines. The two
partial bundles under static/vendor/ are plotly.js's own published distributions (npm packages
plotly.js-basic-dist-min and plotly.js-cartesian-dist-min, static/vendor/README.md), each with
the trace types its package declares.
"""

from collections.abc import Iterable

# Smallest first.
BUNDLES: list[tuple[str, frozenset[str]]] = [
    ("vendor/plotly-basic.min.js", frozenset({"bar", "pie", "scatter"})),
    (
        "vendor/plotly-cartesian.min.js",
        frozenset(
            {
                "bar",
                "box",
                "contour",
                "heatmap",
                "histogram",
                "histogram2d",
                "histogram2dcontour",
                "image",
                "pie",
                "scatter",
                "scatterternary",
                "violin",
            }
        ),
    ),
]


def trace_types(figures: Iterable[dict | None]) -> set[str]:
    """The trace types of these plotly figures; a trace without a type is plotly's scatter."""
    return {t.get("type", "scatter") for f in figures if f for t in f["data"]}


def smallest(figures: Iterable[dict | None]) -> str:
    """The static path of the smallest bundle drawing every trace of these figures."""
    wanted = trace_types(figures)
    for path, types in BUNDLES:
        if wanted <= types:
            return path
    raise ValueError(f"no plotly.js bundle draws trace types {sorted(wanted)}")


def page_figures(context: dict) -> list[dict]:
    """The figures a page's context holds: its chart values, and each headline's figure."""
    found = []
    for value in context.values():
        if isinstance(value, dict) and "data" in value and "layout" in value:
            found.append(value)
        elif isinstance(value, list):
            found += [v["figure"] for v in value if isinstance(v, dict) and v.get("figure")]
    return found


def for_page(context: dict) -> str:
    return smallest(page_figures(context))
