"""The overview's first screen says what the audit held back: how many of the board's pairs, on
how many benchmarks and why, so a reader does not take the ranks below for the whole board."""

import re

import pytest

from boxbench import publishing
from boxbench.models import Aggregate, Scope
from tests.support.web import explain_failures

pytestmark = pytest.mark.django_db


def board_slugs() -> list[str]:
    return list(Aggregate.objects.page(Scope.OVERVIEW)["benchmarks"])


def lead_held_back(client) -> str:
    page = client.get("/").content.decode()
    lead = page.split('id="lead"')[1].split("</section>")[0]
    found = re.search(r'id="lead-held-back">([^<]*)</p>', lead)
    return found.group(1) if found else ""


def test_one_held_back_pair_is_counted_against_the_boards_pairs_in_the_lead(client, imported_run):
    explain_failures(imported_run, held_back=("local", "create"))
    publishing.publish(imported_run)
    # Every other pair is on a board, its provider named by the run its numbers come from.
    pages = [Aggregate.objects.page(Scope.BENCHMARK, slug) for slug in board_slugs()]
    pairs = sum(len({p for s in page["sources"] for p in s["providers"]}) for page in pages)
    said = lead_held_back(client)
    assert said.startswith(f"Held back by the audit: 1 of {pairs + 1} provider-benchmark pairs")
    assert "on 1 benchmark (times drifted during the run: 1)" in said
    assert "no rank and no points until resolved" in said


def test_a_benchmark_held_back_whole_counts_each_of_its_pairs(client, imported_run):
    publishing.run_audit(imported_run)
    publishing.publish(imported_run)
    said = lead_held_back(client)
    assert said.startswith("Held back by the audit: 3 of ")
    assert "on 1 benchmark (times drifted during the run: 3)" in said


def test_a_board_with_nothing_held_back_says_nothing_of_it(client, imported_run):
    explain_failures(imported_run)
    publishing.publish(imported_run)
    assert Aggregate.objects.page(Scope.OVERVIEW)["lead"]["held_back"] == ""
    assert lead_held_back(client) == ""
