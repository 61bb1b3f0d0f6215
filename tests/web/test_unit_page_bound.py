"""A unit page's trial list past its last page is a 404 before any query of the trials: the
bound comes from the counts materialized with the page, so a huge page number never makes the
database walk the rows before its OFFSET."""

import pytest

pytestmark = pytest.mark.django_db
UNIT = "/benchmarks/create/units/create/"


@pytest.mark.parametrize("page", ["2", "9999999", "10000000"])
def test_a_page_past_the_last_is_refused_without_a_trial_query(
    client, published_run, page_queries, page
):
    client.get(UNIT)  # the session and the publication version are not what is measured
    with page_queries() as queries:
        response = client.get(f"{UNIT}?page={page}")
    assert response.status_code == 404
    assert not [q for q in queries if '"boxbench_trial"' in q]


def test_the_last_page_with_trials_is_still_served(client, published_run):
    from boxbench.views import pages

    response = client.get(UNIT)
    assert response.status_code == 200
    assert len(response.context["trials"]) <= pages.TRIALS_PER_PAGE
    assert not response.context["has_next"]


def test_a_provider_filters_bound_counts_its_own_successes_only(
    client, published_run, page_queries, monkeypatch
):
    from boxbench.views import pages

    # Two trials per page: the filtered provider's successes fill a few pages, not the unit's.
    monkeypatch.setattr(pages, "TRIALS_PER_PAGE", 2)
    unit = client.get(UNIT).context["unit"]
    row = next(r for r in unit["rows"] if r["outcomes"].get("success"))
    last = -(-row["outcomes"]["success"] // 2)
    assert client.get(f"{UNIT}?provider={row['provider']}&page={last}").status_code == 200
    with page_queries() as queries:
        beyond = client.get(f"{UNIT}?provider={row['provider']}&page={last + 1}")
    assert beyond.status_code == 404
    assert not [q for q in queries if '"boxbench_trial"' in q]
