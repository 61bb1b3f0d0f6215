"""Charts and tables a newcomer reads: names never cut, one colour per provider, no empty chart,
blank cells that explain themselves, plain unit titles, trial positions, and a paged run page."""

import re

import pytest
from django.template.defaultfilters import floatformat

from boxbench import charts
from boxbench.models import Evidence, Provider, Trial
from boxbench.templatetags.boxbench_format import fixed, plain, ticks
from tests.support.web import explain_failures, figure
from tests.web import factory

pytestmark = pytest.mark.django_db
RUN_URL = f"/runs/{factory.RUN_ID}/"


def colours_by_provider(fig):
    out = {}
    for trace in fig["data"]:
        colours = trace["marker"]["color"]
        names = trace["y"] if trace["type"] == "bar" else [trace["name"]]
        if isinstance(colours, str):
            colours = [colours] * len(names)
        out.update(zip(names, colours, strict=True))
    return out


def test_each_provider_keeps_one_colour_on_every_chart(client, published_run):
    seen = {}
    for path, chart in [
        ("/benchmarks/deepswe/", "workload-chart"),
        ("/benchmarks/deepswe/", "metric-chart"),
        ("/benchmarks/cpu/", "metric-chart"),
        ("/benchmarks/create/units/create/", "distribution-chart"),
    ]:
        for name, colour in colours_by_provider(figure(client.get(path), chart)).items():
            name = name.removesuffix(" trials")
            assert seen.setdefault(name, colour) == colour, (path, chart, name)
    assert len(set(seen.values())) == len(seen) == 3  # three providers, three colours


def test_axes_grow_to_fit_provider_names(client, published_run):
    layout = figure(client.get("/benchmarks/deepswe/"), "metric-chart")["layout"]
    assert layout["yaxis"]["automargin"] and layout["xaxis"]["automargin"]


def test_value_labels_sit_at_the_bar_base_clear_of_the_interval(client, published_run):
    bars = figure(client.get("/benchmarks/deepswe/"), "metric-chart")["data"][0]
    assert bars["error_x"]["visible"]
    assert (bars["textposition"], bars["insidetextanchor"]) == ("inside", "start")


def test_an_all_view_without_any_ranked_provider_is_not_drawn_and_says_why(client, imported_run):
    from boxbench import publishing

    # As with local and docker: no provider-sourced cost, so the Cost view displays nobody.
    for provider in Provider.objects.all():
        provider.pricing = {**provider.pricing, "provider_sourced": False}
        provider.save()
    explain_failures(imported_run)
    publishing.publish(imported_run)
    response = client.get("/benchmarks/deepswe/?view=cost")
    assert figure(response, "workload-chart") is None
    page = response.content.decode()
    why = re.search(r'<p class="empty chart-empty" id="workload-chart-empty">(.*?)</p>', page, re.S)
    assert why and "Not Displayed" in why.group(1) and "provider-sourced cost" in why.group(1)
    # A missing price never hides speed: the Time view draws every workload value.
    assert figure(client.get("/benchmarks/deepswe/"), "workload-chart") is not None


def test_nothing_to_chart_names_each_label_once_with_its_providers():
    rows = [
        {"provider_name": "Local", "label": "Not Displayed", "meaning": "Needs a cost."},
        {"provider_name": "Docker", "label": "Not Displayed", "meaning": "Needs a cost."},
    ]
    assert charts.nothing_to_chart(rows) == "Local, Docker: Not Displayed. Needs a cost."


def test_every_blank_cell_says_why(client, published_run):
    page = client.get("/benchmarks/cpu/").content.decode()
    table = re.search(r'id="unit-table">(.*?)</table>', page, re.S).group(1)
    blanks = re.findall(r'<td class="blank" title="([^"]*)">', table)
    assert blanks and all(blanks)  # the throughput metric's interval, the ranked label...
    assert any("only time medians carry a 95 % interval" in b for b in blanks)
    assert "Blank cells:" in page


def test_unit_titles_render_without_backticks():
    assert ticks("`true`") == "<code>true</code>"
    assert ticks("a `<b>` c") == "a <code>&lt;b&gt;</code> c"
    assert ticks("one ` only") == "one  only"
    assert plain("`true`") == "true"


def test_trial_numbers_are_positions_in_the_run(client, published_run):
    from django.db.models import F

    # Number the trials as a provider's chain block does (1000001, ...).
    Trial.objects.filter(run=published_run).update(seq=F("seq") + 1_000_000)
    page = client.get("/benchmarks/deepswe/units/trace-a/").content.decode()
    cells = re.findall(r'<td title="seq (\d+)">(\d+)</td>', page)
    assert len(cells) == 60
    assert all(int(seq) - 1_000_000 == int(position) for seq, position in cells)
    assert cells[0][1] == "1"


def test_positions_count_every_numbered_trial_of_the_run_up_to_each_seq(published_run):
    import random

    # Chain blocks with gaps, and a trial not numbered yet.
    trials = list(Trial.objects.filter(run=published_run).order_by("seq"))
    for i, trial in enumerate(trials):
        trial.seq = (1 + i % 3) * 1_000_000 + 7 * i
    Trial.objects.bulk_update(trials, ["seq"])
    queued = trials[0]
    Trial.objects.filter(pk=queued.pk).update(seq=None, state="queued", outcome="")
    numbered = sorted(t.seq for t in trials if t.pk != queued.pk)
    rank = {seq: i + 1 for i, seq in enumerate(numbered)}
    page = random.Random(3).sample(numbered, 40)
    assert Trial.objects.positions(published_run.id, page) == {s: rank[s] for s in page}
    assert Trial.objects.positions(published_run.id, []) == {}


def test_the_staff_run_page_pages_private_evidence(staff_client, published_run):
    trials = list(Trial.objects.filter(run=published_run).order_by("seq")[:120])
    Evidence.objects.bulk_create(
        [Evidence(trial=t, kind=k, data={"n": 1}) for t in trials for k in ("readiness", "probe")]
    )
    page = " ".join(staff_client.get(RUN_URL).content.decode().split())
    assert "Evidence page 1 of 10 (1–25 of 240 records)" in page
    assert page.count('<tr><td title="seq') == 25
    assert 'href="?evidence=2#evidence-section">next →</a>' in page
    last = " ".join(staff_client.get(RUN_URL + "?evidence=10").content.decode().split())
    assert "Evidence page 10 of 10 (226–240 of 240 records)" in last
    assert staff_client.get(RUN_URL + "?evidence=11").status_code == 404
    assert staff_client.get(RUN_URL + "?evidence=x").status_code == 404


def test_fixed_decimals_round_as_the_template_filter_did():
    """The comparison table's ratios and detectable differences, once formatted by floatformat,
    are made in the view: the same text, ties (0.125, 2.675) and values rounding to zero too."""
    values = [0.125, 0.135, 2.675, 1.005, 99.995, 12.5, 13.5, -0.001, -0.004, 0.0, 1e-9, 123456.785]
    values += [i / 1000 + 0.0005 for i in range(3000)]
    for value in values:
        for places in (0, 2):
            assert fixed(value, places) == floatformat(value, places), (value, places)
    assert fixed(None, 2) == "" and fixed(float("nan"), 2) == ""
