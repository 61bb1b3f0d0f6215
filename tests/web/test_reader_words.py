"""Pages speak to readers: the methodology opens with what is measured and how it is scored, then
its contents; pages say clocks, job hosts and runs in words; ids stay in the CSV and API."""

import re

import pytest

from boxbench.models import Run
from boxbench.templatetags.boxbench_format import host_type, in_region, run_title
from stats.labels import MEANINGS
from tests.web import factory

pytestmark = pytest.mark.django_db  # the web tests' page cache is a database table

# About two screens of a laptop at the page's 50 em column.
TWO_SCREENS_OF_WORDS = 700


def test_the_methodology_opens_with_what_we_measure_and_how_we_score_then_its_contents(client):
    page = client.get("/methodology/").content.decode()
    headings = re.findall(r'<h2 id="([^"]+)">(.*?)</h2>', page)
    assert [title for _, title in headings[:3]] == ["What we measure", "How we score", "Contents"]
    contents = re.search(r'<div class="toc">(.*?)</div>', page, re.S).group(1)
    assert re.findall(r'href="#([^"]+)"', contents) == [anchor for anchor, _ in headings]
    lead = page[page.index('<h2 id="what-we-measure">') : page.index('<h2 id="contents">')]
    assert len(re.sub(r"<[^>]+>", " ", lead).split()) < TWO_SCREENS_OF_WORDS
    # No test names or this machine's load; the methodology's source credited once.
    # (Terminal-Bench's task directories are named tests/: a test file is tests/<room>/test_*.)
    assert not re.search(r"tests/\w+/test_\w*\.py", page)
    assert "load average" not in page and "at load" not in page
    assert page.count("BoxRouter") == 1


def test_status_label_meanings_name_boxbench_not_another_product():
    assert not [m for m in MEANINGS.values() if "BoxRouter" in m]
    assert "boxbench's account" in MEANINGS["Account Limit"]


def test_clocks_job_hosts_and_runs_are_said_in_words(client, published_run):
    page = client.get("/benchmarks/create/").content.decode()
    assert "timed from the job host" in page
    assert "clock: job_host" not in page and "<b>create_ms</b>" not in page
    Run.objects.filter(id=factory.RUN_ID).update(name="run 2026-12-07 13:21:39")
    page = client.get(f"/runs/{factory.RUN_ID}/").content.decode()
    assert "<h1>Run 2026-12-07 13:21:39</h1>" in page and "Run run" not in page
    assert run_title("nightly") == "Run nightly"
    assert host_type("unnamed x86_64 machine, 2 CPUs") == "x86_64 machine, 2 CPUs"
    assert in_region("unnamed") == " (no region set)"
    assert in_region("us-east-1") == " in region us-east-1"


def test_table_headers_are_human_labels_with_units_and_the_csv_keeps_the_ids(client, published_run):
    page = client.get("/benchmarks/create/").content.decode()
    table = page.split('id="unit-table"')[1].split("</thead>")[0]
    headers = re.findall(r"<th>(.*?)</th>", table)
    assert headers[:11] == [
        "Provider",
        "Rank",
        "Status",
        "Successful trials",
        "Median (ms)",
        "95 % interval, low (ms)",
        "95 % interval, high (ms)",
        "Tail (ms)",
        "Tail statistic",
        "Mean (ms)",
        "Measured in",
    ]
    assert not {"ci_low", "ci_high", "n", "tail kind"} & set(headers)
    csv_header = client.get("/benchmarks/create/units/create.csv").text.splitlines()[0]
    assert csv_header.startswith("provider,rank,label,n,median,ci_low,ci_high,tail,tail kind,mean")


def test_a_provider_page_says_where_its_sandboxes_run_in_words(client, published_run):
    page = client.get("/providers/local/").content.decode()
    assert "Runs on the job host itself (no cloud region)" in page
    assert "region local" not in page
    assert "Region eu-west" in client.get("/providers/boat/").content.decode()


def test_the_overviews_first_screen_says_what_was_not_recorded_and_costs_in_full(
    client, published_run
):
    from boxbench.templatetags.boxbench_format import usd

    assert (usd(3.43561e-05), usd(1.5), usd(1234567.0)) == ("0.0000343561", "1.5", "1234570")
    page = client.get("/").content.decode()
    facts = page.split('id="lead-facts">')[1].split("</p>")[0]
    assert facts.endswith("trials; job hosts:\nnot recorded.")  # the fixture records none
    assert "not recorded in not recorded" not in page and "in region not recorded" not in page
    assert "on 0 these trials" not in page
    composites = page.split('id="composites"')[1].split("</table>")[0]
    assert "e-0" not in composites and "<td>0.0000" in composites


def test_the_caveat_line_ends_once_and_the_derived_view_has_human_headers(client, published_run):
    page = client.get("/benchmarks/deepswe/").content.decode()
    caveats = page.split('id="caveats">')[1].split("</p>")[0]
    assert "slowest time observed on it" in caveats and ".." not in caveats
    derived = page.split('class="data derived-table"')[1].split("</thead>")[0]
    assert re.findall(r"<th>(.*?)</th>", derived) == [
        "Provider",
        "Trials summed",
        "Median (ms)",
        "Tail (ms)",
        "Tail statistic",
    ]


def test_the_run_pages_refusals_and_progress_say_statuses_and_outcomes_in_words(
    admin_client, published_run
):
    page = admin_client.get(f"/runs/{factory.RUN_ID}/").content.decode()
    refusals = re.search(r'<table class="data" id="refusals">.*?</table>', page, re.S)
    assert refusals, "the fixture run refuses a pair at planning"
    shown = refusals.group(0)
    assert "<th>Status</th>" in shown and "Not Supported" in shown
    assert ">R401<" not in shown and "<th>code</th>" not in shown
    progress = re.search(r'<table class="data" id="progress">.*?</table>', page, re.S)
    assert progress and "<th>By outcome</th>" in progress.group(0)
    assert "Success " in progress.group(0) and "success " not in progress.group(0)
    # Pairs named as the boards name them; the slugs stay in the CSV and the API.
    assert "<td>Tiny Cloud</td><td>DeepSWE replay</td>" in shown
    assert "<td>Local sandbox</td><td>Create</td>" in progress.group(0)
    assert "<td>tiny</td>" not in shown and "<td>local</td>" not in progress.group(0)


def test_the_lead_and_the_compare_summary_read_as_sentences():
    from boxbench.leaderboard.verdicts import _job_host_words
    from stats.compare import summary

    series = {"type": "unnamed x86_64 machine, 2 CPUs", "region": "unnamed"}
    assert _job_host_words(series) == "x86_64 machine, 2 CPUs (no region set)"
    assert summary(["a"], "A", "B")["text"].startswith("1 comparison: A ahead on 1")
