"""Caveats the system knows are printed on the benchmark page (boxbench/leaderboard/caveats.py):
the audit's physical-limit and cache flags, a working directory in memory, region markers and
substituted units, each from stored data through publication to what a visitor reads."""

import html
import re

import pytest

from boxbench import publishing
from boxbench.models import Aggregate, Benchmark, Scope, Trial
from tests.support.web import explain_failures

pytestmark = pytest.mark.django_db


def caveat_line(client, path: str) -> str:
    page = client.get(path).content.decode()
    found = re.search(r'<p class="note caveats" id="caveats"><b>Caveats:</b> (.*?)</p>', page, re.S)
    return html.unescape(found.group(1)) if found else ""


def test_the_audits_cpu_bound_flag_and_a_tmpfs_workdir_are_printed_on_the_page(
    client, imported_run
):
    # Local's CPU trials all report a CPU-bound run and a working directory in memory, as the
    # review found on disk-seq; the audit computes its cache_flags check from them.
    local = Trial.objects.filter(run=imported_run, provider__slug="local", benchmark__slug="cpu")
    for trial in local:
        trial.metrics = {**trial.metrics, "flag_cpu_bound": 1.0}
        trial.placement = {**trial.placement, "workdir_fs": "tmpfs"}
        trial.save(update_fields=["metrics", "placement"])
    explain_failures(imported_run)
    publishing.publish(imported_run)
    line = caveat_line(client, "/benchmarks/cpu/")
    assert "Local sandbox: CPU-bound in 100 % of trials (audit)" in line
    assert "Local sandbox: its working directory is in memory (tmpfs) in 100 % of trials" in line
    assert "Docker:" not in line  # nothing flagged for docker
    summary = Aggregate.objects.page(Scope.BENCHMARK, "cpu")
    assert summary["caveats"][0] == "Local sandbox: CPU-bound in 100 % of trials (audit)"


def test_region_markers_and_substituted_units_are_caveats_too(client, published_run):
    line = caveat_line(client, "/benchmarks/deepswe/")
    assert "Boat: marked EU: Timed from the US job host: includes the transatlantic round" in line
    # Boat never completed trace-c: its workload value takes the slowest time observed there.
    assert "Boat: No successful trials on trace-c: the slowest time observed on it" in line


def test_a_board_says_only_what_is_recorded(published_run):
    # Create: no audit flag, no memory workdir, one unit: only boat's region marker.
    summary = Aggregate.objects.page(Scope.BENCHMARK, "create")
    assert summary["caveats"] == [
        "Boat: marked EU: Timed from the US job host: includes the transatlantic round trip"
    ]


def test_a_region_marker_marks_only_metrics_timed_from_the_job_host(client, imported_run):
    # The same board timed by the sandbox's own clock (as DeepSWE's tool time is): the far
    # region's network path is in none of its numbers, so no marker on its chart, rows or caveats.
    Benchmark.objects.filter(slug="deepswe").update(clock="guest")
    explain_failures(imported_run)
    publishing.publish(imported_run)
    assert "marked EU" not in caveat_line(client, "/benchmarks/deepswe/")
    deepswe = Aggregate.objects.page(Scope.BENCHMARK, "deepswe")
    assert {r["region_marker"] for r in deepswe["rows"]} == {""}
    create = Aggregate.objects.page(Scope.BENCHMARK, "create")
    assert {r["region_marker"] for r in create["rows"]} == {"", "EU"}
