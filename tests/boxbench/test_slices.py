"""Pages cut to what one address shows (boxbench.leaderboard.slices): a comparison's counts
over all of each benchmark's rows, the first units of each, a benchmark's units page by page; a
history one unit at a time; and an address that names nothing refused. Pure: no database."""

import pytest

from boxbench.leaderboard import slices
from boxbench.leaderboard.slices import (
    OVERVIEW_UNITS_PER_PAGE,
    UNITS_PER_PAGE,
    UNITS_SHOWN,
    NotOnPage,
    cut_comparison,
    cut_history,
    cut_overview,
    overview_units,
)

MANY_UNITS = 2 * UNITS_PER_PAGE + 7  # three pages, the last one short


def row(benchmark: str, unit: str, stage: str, verdict: str) -> dict:
    return {
        "benchmark": benchmark,
        "benchmark_title": benchmark.title(),
        "unit": unit,
        "unit_title": unit,
        "stage": stage,
        "verdict": verdict,
    }


def comparison() -> dict:
    rows = [row("create", "default", "", "a"), row("create", "default", "boot", "none")]
    for i in range(MANY_UNITS):
        # Each unit's main metric and one stage; verdicts rotate so the counts are not uniform.
        rows.append(row("deepswe", f"unit-{i:03d}", "", ("a", "b", "none")[i % 3]))
        rows.append(row("deepswe", f"unit-{i:03d}", "replay", "not_comparable"))
    rows.append(row("cpu", "default", "", "b"))
    summary = {"counts": {}, "text": "the whole comparison's summary"}
    return {"a": {"provider": "x"}, "b": {"provider": "y"}, "summary": summary, "rows": rows}


def units_of(rows: list[dict], benchmark: str) -> list[str]:
    return list(dict.fromkeys(r["unit"] for r in rows if r["benchmark"] == benchmark))


def test_the_first_address_shows_every_benchmark_and_the_first_units_of_each():
    page = comparison()
    shown = cut_comparison(page)
    assert shown["benchmark"] == "" and (shown["page"], shown["pages"]) == (1, 1)
    assert shown["summary"] == page["summary"] and shown["a"] == page["a"]
    assert units_of(shown["rows"], "deepswe") == [f"unit-{i:03d}" for i in range(UNITS_SHOWN)]
    # A unit shown brings all of its series; small benchmarks show whole.
    assert len([r for r in shown["rows"] if r["benchmark"] == "deepswe"]) == 2 * UNITS_SHOWN
    assert [r for r in shown["rows"] if r["benchmark"] != "deepswe"] == [
        r for r in page["rows"] if r["benchmark"] != "deepswe"
    ]
    by_slug = {b["benchmark"]: b for b in shown["benchmarks"]}
    assert list(by_slug) == ["create", "deepswe", "cpu"]  # the materialized order
    deepswe = by_slug["deepswe"]
    assert (deepswe["units"], deepswe["units_shown"]) == (MANY_UNITS, UNITS_SHOWN)
    # The counts are over every row of the benchmark, not only the rows shown.
    assert deepswe["counts"] == {
        "a": len(range(0, MANY_UNITS, 3)),
        "b": len(range(1, MANY_UNITS, 3)),
        "none": len(range(2, MANY_UNITS, 3)),
        "not_comparable": MANY_UNITS,
    }
    assert by_slug["create"]["counts"] == {"a": 1, "b": 0, "none": 1, "not_comparable": 0}
    assert sum(sum(b["counts"].values()) for b in shown["benchmarks"]) == len(page["rows"])


def test_a_benchmarks_pages_show_each_of_its_units_once_and_nothing_else():
    page = comparison()
    seen = []
    for number in (1, 2, 3):
        shown = cut_comparison(page, "deepswe", number)
        assert (shown["benchmark"], shown["page"], shown["pages"]) == ("deepswe", number, 3)
        assert {r["benchmark"] for r in shown["rows"]} == {"deepswe"}
        counts = {b["benchmark"]: b["units_shown"] for b in shown["benchmarks"]}
        assert counts == {"create": 0, "deepswe": len(units_of(shown["rows"], "deepswe")), "cpu": 0}
        seen += shown["rows"]
    assert seen == [r for r in page["rows"] if r["benchmark"] == "deepswe"]
    assert len(units_of(cut_comparison(page, "deepswe", 3)["rows"], "deepswe")) == 7
    assert cut_comparison(page, "cpu")["pages"] == 1


@pytest.mark.parametrize(
    ("benchmark", "number", "message"),
    [
        ("nowhere", 1, "no benchmark 'nowhere' in common"),
        ("deepswe", 4, "deepswe has 3 page(s) of units, not 4"),
        ("", 2, "pages are a benchmark's"),
    ],
)
def test_an_address_that_names_nothing_is_refused_saying_what(benchmark, number, message):
    with pytest.raises(NotOnPage, match=message.replace("(", r"\(").replace(")", r"\)")):
        cut_comparison(comparison(), benchmark, number)


def test_an_empty_comparison_has_no_benchmarks():
    page = {**comparison(), "rows": []}
    assert cut_comparison(page)["benchmarks"] == [] and cut_comparison(page)["rows"] == []


def test_the_sizes_are_read_when_a_page_is_cut(monkeypatch):
    # The web tests shrink these to reach a benchmark's second page with few units.
    monkeypatch.setattr(slices, "UNITS_SHOWN", 1)
    monkeypatch.setattr(slices, "UNITS_PER_PAGE", 1)
    assert len(units_of(cut_comparison(comparison())["rows"], "deepswe")) == 1
    assert cut_comparison(comparison(), "deepswe")["pages"] == MANY_UNITS


def history() -> dict:
    def series(provider: str, units: list[str]) -> dict:
        return {
            "provider": provider,
            "points": [{"run": run, "unit": u} for run in ("r1", "r2") for u in units],
            "changes": [{"unit": u} for u in units],
        }

    return {
        "benchmark": "deepswe",
        "title": "DeepSWE",
        "measure_unit": "ms",
        "lower_is_better": True,
        "series": [series("x", ["u1", "u2", "u3"]), series("y", ["u2"])],
    }


def test_a_history_is_answered_one_unit_at_a_time():
    whole = history()
    first = cut_history(whole)
    assert (first["unit"], first["units"]) == ("u1", ["u1", "u2", "u3"])
    assert [len(s["points"]) for s in first["series"]] == [2, 0]  # y has no point on u1
    second = cut_history(whole, "u2")
    assert [[p["unit"] for p in s["points"]] for s in second["series"]] == [["u2"] * 2] * 2
    assert [s["changes"] for s in second["series"]] == [[{"unit": "u2"}]] * 2
    assert whole == history()  # the materialized page is left as it was
    with pytest.raises(NotOnPage, match="deepswe has no history on a unit 'u9'"):
        cut_history(whole, "u9")
    assert cut_history({**whole, "series": []})["unit"] == ""


def overview(units: dict[str, int]) -> dict:
    """An overview whose benchmarks have units[slug] units each; the first benchmark sits under
    two sections, as DeepSWE does (Workload Time and Workload Cost)."""
    names = {slug: [f"{slug}-{i:03d}" for i in range(count)] for slug, count in units.items()}

    def node(level: str, key: str, children: list) -> dict:
        scored = {"scores": {"x": 1.0}, "ranks": {"x": 1}}
        return {"key": key, "level": level, "label": key, **scored, "children": children}

    def benchmark(slug: str) -> dict:
        return node("benchmark", slug, [node("unit", u, []) for u in names[slug]])

    first = next(iter(units))
    sections = [node("section", "time", [benchmark(slug) for slug in units])]
    sections.append(node("section", "cost", [benchmark(first)]))
    rows = {u: [{"provider": "x", "value": 1.0}] for us in names.values() for u in us}
    benchmarks = {
        slug: {
            "title": slug,
            "units": {u: u.title() for u in us},
            "results": {"rows": [], "units": {u: rows[u] for u in us}},
        }
        for slug, us in names.items()
    }
    return {"tree": node("overall", "overall", sections), "benchmarks": benchmarks, "lead": {}}


def tree_units(tree: dict, parent: str = "") -> list[tuple[str, str]]:
    found = [(parent, tree["key"])] if tree["level"] == "unit" else []
    return found + [pair for child in tree["children"] for pair in tree_units(child, tree["key"])]


def test_the_overview_is_answered_a_page_of_units_at_a_time():
    whole = overview({"deepswe": 2 * OVERVIEW_UNITS_PER_PAGE + 3, "create": 1, "cpu": 1})
    pages = [cut_overview(whole, n) for n in (1, 2, 3)]
    assert {count for _, count in pages} == {3}
    seen: list[tuple[str, str]] = []
    for page, _ in pages:
        units = list(dict.fromkeys(tree_units(page["tree"])))
        assert len(units) <= OVERVIEW_UNITS_PER_PAGE
        # A benchmark's titles and rows are those of the units its tree leaves show.
        for slug, benchmark in page["benchmarks"].items():
            shown = [u for b, u in units if b == slug]
            assert list(benchmark["units"]) == shown
            assert list(benchmark["results"]["units"]) == shown
        # Everything above the units is on every page.
        assert [s["key"] for s in page["tree"]["children"]] == ["time", "cost"]
        assert page["lead"] == whole["lead"]
        seen += units
    assert seen == overview_units(whole) and len(set(seen)) == len(seen)
    # The benchmark under two sections keeps the same units under both.
    time_units = [u for b, u in tree_units(pages[0][0]["tree"]["children"][0]) if b == "deepswe"]
    cost_units = [u for b, u in tree_units(pages[0][0]["tree"]["children"][1])]
    assert time_units == cost_units


def test_an_overview_that_fits_one_page_is_answered_whole():
    whole = overview({"create": 1, "deepswe": 3})
    assert cut_overview(whole) == (whole, 1)


def test_a_page_past_the_overviews_last_is_refused_saying_how_many_there_are():
    whole = overview({"deepswe": OVERVIEW_UNITS_PER_PAGE + 1})
    with pytest.raises(NotOnPage, match="the overview has 2 page"):
        cut_overview(whole, 3)
