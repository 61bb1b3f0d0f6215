"""Results series and change detection: two comparable runs with a
planted 20 % slowdown for one provider and benchmark flag that change and nothing else; a third
run with another image digest starts a new series and is compared with nothing."""

import xml.etree.ElementTree as ET
from datetime import datetime, timedelta

import pytest

from boxbench.history_charts import DAY_MS, tick_days
from boxbench.models import Aggregate, Scope
from tests.support.history import variant
from tests.support.web import figure

pytestmark = pytest.mark.django_db


def all_changes() -> list[tuple[str, dict, dict]]:
    return [
        (key, series, change)
        for key, page in Aggregate.objects.filter(scope=Scope.HISTORY).values_list("key", "data")
        for series in page["series"]
        for change in series["changes"]
    ]


def test_a_planted_slowdown_is_flagged_and_a_new_image_starts_a_new_series(tmp_path):
    variant(tmp_path / "1.jsonl", 1)
    assert all_changes() == []  # one run: nothing to compare
    variant(tmp_path / "2.jsonl", 2, slower={("local", "cpu"): 1 / 1.2})
    found = all_changes()
    flagged = [(key, s["provider"], c) for key, s, c in found if c["flagged"]]
    assert [(key, provider) for key, provider, _ in flagged] == [("cpu", "local")]
    change = flagged[0][2]
    assert change["direction"] == "lower" and change["percent"] == pytest.approx(-16.7, abs=2)
    assert change["text"].startswith("CPU cpu 17 % lower than run run-1, q = ")
    # Every other comparable pair was compared, and none flagged.
    assert len(found) > 1 and all(c["q"] is not None for _, _, c in found)
    # Run 3 runs Create and CPU on another image: a new series each, compared with nothing.
    variant(tmp_path / "3.jsonl", 3, standard_digest="sha256:" + "77" * 32)
    history = Aggregate.objects.page(Scope.HISTORY, "cpu")
    local = [s for s in history["series"] if s["provider"] == "local"]
    assert len(local) == 2
    newest = next(s for s in local if s["image_digest"] == "sha256:" + "77" * 32)
    assert [p["run_name"] for p in newest["points"]] == ["run-3"] and newest["changes"] == []
    older = next(s for s in local if s is not newest)
    assert [p["run_name"] for p in older["points"]] == ["run-1", "run-2"]
    # DeepSWE kept its image: its series now compares run 3 with run 2, and flags nothing.
    deepswe = Aggregate.objects.page(Scope.HISTORY, "deepswe")
    for series in deepswe["series"]:
        assert [p["run_name"] for p in series["points"]][-1] == "run-3"
        assert all(not c["flagged"] and c["later_run_name"] == "run-3" for c in series["changes"])


def test_the_benchmark_page_charts_the_history_and_lists_the_changes(client, tmp_path):
    first = variant(tmp_path / "1.jsonl", 1)
    second = variant(tmp_path / "2.jsonl", 2, slower={("local", "cpu"): 1 / 1.2})
    response = client.get("/benchmarks/cpu/")
    chart = figure(response, "history-chart")
    history = Aggregate.objects.page(Scope.HISTORY, "cpu")
    assert len(chart["data"]) == len(history["series"])
    for trace in chart["data"]:
        assert [c[0] for c in trace["customdata"]] == [f"/runs/{first.id}/", f"/runs/{second.id}/"]
    # Dated ticks a whole number of days apart, at most three gaps: room for each label.
    axis = chart["layout"]["xaxis"]
    start, end = (datetime.fromisoformat(x) for x in axis["range"])
    assert axis["dtick"] % DAY_MS == 0
    assert (end - start) / timedelta(milliseconds=axis["dtick"]) <= 3
    answer = client.get("/api/v1/benchmarks/cpu/history").json()["page"]
    assert answer == {**history, "unit": "cpu", "units": ["cpu"]}
    page = response.content.decode()
    assert "CPU cpu 17 % lower than run run-1" in page
    assert page.index("CPU cpu 17 %") < page.index("<td>no</td>")  # flagged ones first


@pytest.mark.parametrize("hours", [0, 1, 30, 50, 73, 74, 98, 99, 200, 1000, 24 * 400])
def test_the_history_axis_keeps_at_most_three_gaps_between_dated_ticks(hours):
    # Its range is the runs' span and a day either side. Left to Plotly, one run's two days
    # had ticks 12 h apart, 74 px on a phone, and their 76 px date labels overlapped.
    last = datetime(2026, 12, 7, 2, 30)
    start = (last - timedelta(hours=hours, days=1)).isoformat()
    end = (last + timedelta(days=1)).isoformat()
    days = tick_days(start, end)
    span_days = (hours + 48) / 24
    assert span_days / days <= 3
    assert days == 1 or span_days / (days - 1) > 3  # the shortest step that keeps three


def atom_entries(response) -> list[dict]:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/atom+xml")
    atom = "{http://www.w3.org/2005/Atom}"
    root = ET.fromstring(response.content)
    return [
        {"title": e.find(f"{atom}title").text, "link": e.find(f"{atom}link").get("href")}
        for e in root.iter(f"{atom}entry")
    ]


def test_the_feed_and_the_provider_page_carry_the_flagged_change(client, tmp_path):
    variant(tmp_path / "1.jsonl", 1)
    variant(tmp_path / "2.jsonl", 2, slower={("local", "cpu"): 1 / 1.2})
    entries = atom_entries(client.get("/providers/local/feed.xml"))
    changes = [e for e in entries if e["title"].startswith("Change: ")]
    assert [e["title"] for e in changes] == [
        next(c["text"] for _, s, c in all_changes() if c["flagged"]).join(["Change: ", ""])
    ]
    assert changes[0]["link"].endswith("/benchmarks/cpu/#history")
    published = {e["title"] for e in entries if "results published" in e["title"]}
    assert {"CPU: results published from run run-1", "CPU: results published from run run-2"} <= (
        published
    )
    docker = atom_entries(client.get("/providers/docker/feed.xml"))
    assert docker and not any(e["title"].startswith("Change: ") for e in docker)
    page = client.get("/providers/local/").content.decode()
    assert "CPU cpu 17 % lower than run run-1" in page
    assert client.get("/providers/nobody/feed.xml").status_code == 404


def test_the_history_api_answers_one_unit_at_a_time(client, tmp_path):
    variant(tmp_path / "1.jsonl", 1)
    variant(tmp_path / "2.jsonl", 2)
    pages = dict(Aggregate.objects.filter(scope=Scope.HISTORY).values_list("key", "data"))
    slug, whole = next(
        (key, page)
        for key, page in pages.items()
        if len({p["unit"] for s in page["series"] for p in s["points"]}) > 1
    )
    address = f"/api/v1/benchmarks/{slug}/history"
    units = client.get(address).json()["page"]["units"]
    assert client.get(address).json()["page"]["unit"] == units[0]
    assert set(units) == {p["unit"] for s in whole["series"] for p in s["points"]}
    points: dict[str, list] = {s["provider"]: [] for s in whole["series"]}
    changes: dict[str, list] = {s["provider"]: [] for s in whole["series"]}
    for unit in units:
        page = client.get(f"{address}?unit={unit}").json()["page"]
        assert page["unit"] == unit
        for series in page["series"]:
            assert {p["unit"] for p in series["points"]} <= {unit}
            points[series["provider"]] += series["points"]
            changes[series["provider"]] += series["changes"]
    # Unit by unit, the answers hold every point and change of the whole history.
    for series in whole["series"]:
        key = lambda p: (p["run"], p["unit"])  # noqa: E731
        assert sorted(points[series["provider"]], key=key) == sorted(series["points"], key=key)
        assert len(changes[series["provider"]]) == len(series["changes"])
    assert client.get(f"{address}?unit=nowhere").status_code == 404


def test_the_feeds_links_come_from_the_site_address_not_the_first_visitors_host(
    client, tmp_path, settings
):
    variant(tmp_path / "1.jsonl", 1)
    settings.ALLOWED_HOSTS = ["evil.example", "testserver"]
    settings.SITE_URL = "https://bench.example.org"
    first = client.get("/providers/local/feed.xml", HTTP_HOST="evil.example")
    assert b"evil.example" not in first.content
    links = [e["link"] for e in atom_entries(first)]
    assert links and all(link.startswith("https://bench.example.org/runs/") for link in links)
    # The next visitor is served the cached feed: the same links.
    assert client.get("/providers/local/feed.xml").content == first.content
