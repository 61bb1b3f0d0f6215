"""A provider named with plotly's pseudo-HTML (a link) is drawn as text on every chart: each
label is escaped, and no hovertemplate (which plotly parses) holds a name."""

import json

import pytest

from boxbench import chart_style, charts, history_charts, publishing
from boxbench.models import Aggregate, Provider, Scope
from tests.support.web import explain_failures

pytestmark = pytest.mark.django_db
HOSTILE = '<a href="https://evil.example/">Local</a>'


@pytest.fixture
def hostile_board(imported_run):
    Provider.objects.filter(slug="local").update(name=HOSTILE)
    explain_failures(imported_run)
    publishing.publish(imported_run)


def figures() -> list[dict]:
    overview = Aggregate.objects.page(Scope.OVERVIEW)
    unit = Aggregate.objects.page(Scope.UNIT, "deepswe", "trace-a")
    benchmark = Aggregate.objects.page(Scope.BENCHMARK, "deepswe")
    history = Aggregate.objects.page(Scope.HISTORY, "deepswe")
    found = [
        charts.score_chart(overview),
        charts.metric_bars(unit),
        charts.stacked_stage_bars(unit),
        charts.stacked_cost_bars(unit),
        charts.distribution(unit),
        charts.workload_bars(benchmark),
    ]
    if history:
        found.append(history_charts.history_chart(history, "trace-a"))
    return [f for f in found if f]


def templates(value):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "hovertemplate":
                yield item
            else:
                yield from templates(item)
    elif isinstance(value, list):
        for item in value:
            yield from templates(item)


def test_a_hostile_provider_name_is_text_on_every_chart(hostile_board):
    drawn = figures()
    assert len(drawn) >= 5
    for figure in drawn:
        text = json.dumps(figure)
        assert "<a " not in text and 'evil.example/\\">' not in text
    escaped = json.dumps(chart_style.chart_text(HOSTILE))[1:-1]  # as it stands in the figure's JSON
    assert escaped.startswith("&lt;a href=") and any(escaped in json.dumps(f) for f in drawn)


def test_no_hovertemplate_holds_a_name(hostile_board):
    for figure in figures():
        for template in templates(figure):
            assert "Local" not in template and "evil" not in template, template
