"""Chart titles are wrapped to a phone's width: plotly never wraps a title and cuts one that is
wider than its chart at both ends."""

from boxbench import chart_style
from boxbench.chart_style import SUBTITLE_CHARS, TITLE_CHARS, layout, wrap_title


def lines_of(text: str) -> list[str]:
    parts = text.replace("<sub>", "<br>").replace("</sub>", "").split("<br>")
    return [p for p in parts if p]


def test_a_long_subtitle_is_broken_between_words_within_a_phones_width():
    sub = "0 to 100, higher is better; a missing result scores 0; not scored by anyone: " * 2
    wrapped, added = wrap_title(f"Scores by section<br><sub>{sub.strip()}</sub>")
    assert added >= 2
    assert wrapped.startswith("Scores by section<br><sub>") and wrapped.endswith("</sub>")
    assert all(len(line) <= SUBTITLE_CHARS for line in lines_of(wrapped))
    assert " ".join(lines_of(wrapped)[1:]) == sub.strip()  # no word lost or split


def test_a_long_main_title_is_wrapped_at_its_own_width_and_breaks_written_are_kept():
    title = "Stage medians of a unit whose title runs on for many words (ms)<br><sub>a<br>b</sub>"
    wrapped, added = wrap_title(title)
    assert added == 1
    assert all(len(line) <= TITLE_CHARS for line in lines_of(wrapped))
    assert wrapped.endswith("<sub>a<br>b</sub>")


def test_a_short_title_is_left_alone():
    assert wrap_title("CPU<br><sub>ops/s, higher is better</sub>") == (
        "CPU<br><sub>ops/s, higher is better</sub>",
        0,
    )


def test_each_added_line_makes_room_above_the_plot_and_in_the_figure():
    short = layout("CPU", 300, margin={"l": 1, "r": 2, "t": 80, "b": 3})
    long = layout("CPU<br><sub>" + "word " * 40 + "</sub>", 300, margin=short["margin"])
    _, added = wrap_title("CPU<br><sub>" + "word " * 40 + "</sub>")
    assert long["margin"]["t"] == 80 + chart_style.LINE_PX * added
    assert long["height"] == 300 + chart_style.LINE_PX * added
    assert short["margin"] == {"l": 1, "r": 2, "t": 80, "b": 3}
