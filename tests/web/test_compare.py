"""Two providers compared (/compare/?a=&b= and its CSV): the verdicts recomputed independently
from the public raw data with plain numpy and scipy, the page and its download, and bad input."""

import csv
import html
import io
import json
import math
from collections import defaultdict
from itertools import permutations

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as scipy_stats

from boxbench import publishing
from boxbench.leaderboard import slices
from boxbench.models import Aggregate, Provider, Run, Scope
from boxbench.rawdata import PUBLIC, export_jsonl
from tests.support.web import explain_failures

pytestmark = pytest.mark.django_db


def lower_median(values):
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def exact_median_draws(values, u):
    """Resampled lower medians from their exact law: P(median <= x_(j)) is the chance that at
    least ceil(n/2) of n draws land on the j smallest values."""
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    cdf = np.array([scipy_stats.binom.sf((n + 1) // 2 - 1, n, j / n) for j in range(1, n + 1)])
    cdf[-1] = 1.0
    return x[np.minimum(np.searchsorted(np.maximum.accumulate(cdf), u, side="right"), n - 1)]


def detectable_percent(a, b):
    """Cohen's d a two-sided t-test reaches with 80 % power at 5 % on group sizes scaled by the
    rank test's efficiency 3/pi, solved with scipy's noncentral t, times the pooled robust
    sigma, over the medians' geometric mean."""
    n1, n2 = len(a) * 3 / math.pi, len(b) * 3 / math.pi
    df = n1 + n2 - 2
    crit = scipy_stats.t.ppf(0.975, df)

    def short_of_power(d):
        nc = d * math.sqrt(n1 * n2 / (n1 + n2))
        reached = scipy_stats.nct.sf(crit, df, nc) + scipy_stats.nct.cdf(-crit, df, nc)
        return (1.0 if math.isnan(reached) else reached) - 0.8  # nan: far past any doubt

    d = optimize.brentq(short_of_power, 1e-6, 5, xtol=1e-12)
    mad = scipy_stats.median_abs_deviation
    sigma = math.sqrt((mad(a, scale="normal") ** 2 + mad(b, scale="normal") ** 2) / 2)
    return 100 * d * sigma / math.sqrt(lower_median(a) * lower_median(b))


def recompute(text: str) -> dict:
    """{(a, b): {(benchmark, unit, series): (verdict, ratio, ci_low, ci_high, detectable)}} from
    the public file alone."""
    header, *lines = (json.loads(line) for line in text.splitlines()[:-1])
    benchmarks = {b["slug"]: b for b in header["benchmarks"]}
    series = defaultdict(list)
    for t in sorted((t for t in lines if t["type"] == "trial"), key=lambda t: t["seq"]):
        b = benchmarks[t["benchmark"]]
        series[(t["benchmark"], t["unit"], "", t["provider"])].append(t["metrics"][b["metric"]])
        for stage, value in t["stages"].items():
            series[(t["benchmark"], t["unit"], stage, t["provider"])].append(value)
    rng = np.random.default_rng(0)
    first, second = rng.random(10000), rng.random(10000)
    found = defaultdict(dict)
    for a, b in permutations(sorted({key[3] for key in series}), 2):
        for (slug, unit, stage, provider), values_a in series.items():
            values_b = series.get((slug, unit, stage, b))
            if provider != a or not values_b:
                continue
            # Another region marker, another image or a provider below the floor are caveats
            # beside the verdict, never a refusal; the fixture holds one job-host series and
            # declares no machine sizes, so every pair is compared.
            # The slug that sorts first draws from the first uniforms.
            u_a, u_b = (first, second) if a < b else (second, first)
            ratios = np.sort(exact_median_draws(values_b, u_b) / exact_median_draws(values_a, u_a))
            low, high = float(ratios[250 - 1]), float(ratios[9750 - 1])
            if a > b:  # the page flips its partner's interval rather than redraw
                back = np.sort(1 / ratios)
                low, high = 1 / float(back[9750 - 1]), 1 / float(back[250 - 1])
            lower = stage or benchmarks[slug]["direction"] == "lower"
            median_a, median_b = lower_median(values_a), lower_median(values_b)
            detectable = detectable_percent(values_a, values_b)
            apart = 100 * abs(median_b - median_a) / math.sqrt(median_a * median_b)
            if apart < detectable:  # smaller than the samples can detect: no winner
                verdict = "none"
            elif low > 1:
                verdict = "a" if lower else "b"
            elif high < 1:
                verdict = "b" if lower else "a"
            else:
                verdict = "none"
            ratio = median_b / median_a
            found[(a, b)][(slug, unit, stage)] = (verdict, ratio, low, high, detectable)
    return found


def test_the_verdicts_agree_with_a_recomputation_from_the_public_raw_data(cpu_alike_run):
    expected = recompute("".join(export_jsonl(cpu_alike_run, PUBLIC)))
    verdicts = defaultdict(int)
    for (a, b), rows in expected.items():
        page = Aggregate.objects.page(Scope.COMPARE, a, b)
        published = {(r["benchmark"], r["unit"], r["stage"]): r for r in page["rows"]}
        assert set(published) == set(rows), (a, b)
        for key, (verdict, ratio, low, high, detectable) in rows.items():
            row = published[key]
            assert row["verdict"] == verdict, (a, b, key, row["text"])
            verdicts[verdict] += 1
            if verdict == "not_comparable":
                assert row["ratio"] is None and row["reason"]
                continue
            assert row["ratio"] == pytest.approx(ratio, rel=1e-12), (a, b, key)
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), rel=1e-12)
            # statsmodels solves for d to about six digits.
            assert row["detectable_percent"] == pytest.approx(detectable, rel=1e-4)
        assert page["summary"]["counts"] == {
            v: sum(r["verdict"] == v for r in page["rows"])
            for v in ("a", "b", "none", "not_comparable")
        }
    # Every verdict but a refusal occurs: Local ahead of Docker, the CPU copy undecided, and
    # Boat (timed across another distance) compared with a caveat.
    assert verdicts["a"] and verdicts["b"] and verdicts["none"]
    assert not verdicts["not_comparable"]
    boat = Aggregate.objects.page(Scope.COMPARE, "local", "boat")["rows"]
    assert all(
        "timed across different distances (Local sandbox: near the job host, Boat: EU)"
        in r["caveats"]
        for r in boat
    )


def test_another_machine_size_stays_not_comparable_with_its_reason(client, imported_run):
    boat = Provider.objects.get(slug="boat")
    boat.declaration = {**boat.declaration, "machine_sizes": [{"cpus": 8, "memory_mib": 16384}]}
    boat.save(update_fields=["declaration"])
    explain_failures(imported_run)
    publishing.publish(imported_run)
    rows = Aggregate.objects.page(Scope.COMPARE, "local", "boat")["rows"]
    assert rows and all(r["verdict"] == "not_comparable" for r in rows)
    assert rows[0]["text"] == (
        "not comparable: different machine size (Boat declares no 2 CPU / 4096 MiB)"
    )
    page = client.get("/compare/?a=local&b=boat").content.decode()
    assert "not comparable: different machine size (Boat declares no 2 CPU / 4096 MiB)" in page
    docker = Aggregate.objects.page(Scope.COMPARE, "local", "docker")["rows"]
    assert not any(r["verdict"] == "not_comparable" for r in docker)


def test_two_providers_on_different_images_are_compared_with_the_images_as_a_caveat(
    client, imported_run
):
    # Local's image is a digest of the host toolchain: it never shares one with a container.
    manifest = dict(imported_run.manifest)
    del manifest["image_digests"]
    manifest["images"] = {
        slug: {"digest": f"sha256:{digit * 64}"}
        for slug, digit in (("local", "1"), ("docker", "2"))
    }
    Run.objects.filter(id=imported_run.id).update(manifest=manifest)
    run = Run.objects.get(id=imported_run.id)
    explain_failures(run)
    publishing.publish(run)
    rows = Aggregate.objects.page(Scope.COMPARE, "local", "docker")["rows"]
    create = next(r for r in rows if r["benchmark"] == "create" and not r["stage"])
    assert create["verdict"] == "a", create["text"]
    assert any(c.startswith("different images (Local sandbox ") for c in create["caveats"])
    page = client.get("/compare/?a=local&b=docker").content.decode()
    assert "not comparable: " not in page and "not comparable on 0" in page
    assert "different images (Local sandbox " in page


def test_the_compare_page_shows_the_summary_rows_and_a_permalink(client, cpu_alike_run):
    page = client.get("/compare/?a=local&b=docker").content.decode()
    data = Aggregate.objects.page(Scope.COMPARE, "local", "docker")
    assert data["summary"]["text"] in page
    assert 'id="permalink" href="/compare/?a=local&amp;b=docker"' in page
    cpu = next(r for r in data["rows"] if r["benchmark"] == "cpu" and not r["stage"])
    assert cpu["text"].startswith("no detectable difference (< ")
    create = next(r for r in data["rows"] if r["benchmark"] == "create" and not r["stage"])
    assert create["text"].startswith("Local sandbox faster by ")
    for row in data["rows"]:
        assert html.escape(row["text"]) in page


def test_the_csv_holds_the_pages_rows(client, cpu_alike_run):
    response = client.get("/compare.csv?a=docker&b=local")
    assert response["Content-Disposition"] == 'attachment; filename="compare-docker-local.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    data = Aggregate.objects.page(Scope.COMPARE, "docker", "local")
    assert [(r["benchmark"], r["unit"], r["verdict"]) for r in rows] == [
        (r["benchmark"], r["unit"], r["text"]) for r in data["rows"]
    ]


def test_swapping_a_and_b_inverts_the_ratio_and_keeps_the_verdicts(cpu_alike_run):
    one = Aggregate.objects.page(Scope.COMPARE, "local", "docker")["rows"]
    other = Aggregate.objects.page(Scope.COMPARE, "docker", "local")["rows"]
    swap = {"a": "b", "b": "a"}
    for mine, theirs in zip(one, other, strict=True):
        assert swap.get(mine["verdict"], mine["verdict"]) == theirs["verdict"]
        assert mine["text"] == theirs["text"]
        if mine["ratio"] is not None:
            assert mine["ratio"] == pytest.approx(1 / theirs["ratio"])
            assert mine["ci_low"] == pytest.approx(1 / theirs["ci_high"])


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("?a=local", 404),  # one provider
        ("?b=local", 404),
        ("?a=local&b=local", 404),  # the same one twice
        ("?a=local&b=nobody", 404),  # nothing published for it
        ("?a=%00&b=local", 400),  # a control character: the middleware's answer
    ],
)
def test_a_bad_pair_is_refused_without_a_server_error(client, cpu_alike_run, query, status):
    for path in ("/compare/", "/compare.csv"):
        assert client.get(path + query).status_code == status, (path, query)


def test_the_csv_needs_a_pair(client, cpu_alike_run):
    assert client.get("/compare.csv").status_code == 404


def test_without_a_pair_the_page_opens_on_the_first_two_ranked_providers(client, cpu_alike_run):
    page = client.get("/compare/").content.decode()
    assert page.count('<select name="a">') == 1
    for slug in ("local", "docker", "boat"):
        assert f'<option value="{slug}"' in page
    assert 'value="tiny"' not in page  # refused everywhere: nothing to compare
    ranks = Aggregate.objects.page(Scope.OVERVIEW)["tree"]["ranks"]
    first, second = sorted(ranks, key=ranks.get)[:2]
    names = {"local": "Local sandbox", "docker": "Docker", "boat": "Boat"}
    assert f"<h1>{names[first]} (a) vs {names[second]} (b)</h1>" in page
    data = Aggregate.objects.page(Scope.COMPARE, first, second)
    assert data["summary"]["text"] in page


@pytest.fixture
def one_unit_at_a_time(monkeypatch):
    """A page of one unit, so the fixture's few units reach a benchmark's second page."""
    monkeypatch.setattr(slices, "UNITS_SHOWN", 1)
    monkeypatch.setattr(slices, "UNITS_PER_PAGE", 1)


def many_units(data: dict) -> tuple[str, list[str]]:
    """The benchmark of the comparison with the most units, and its units in order."""
    units: dict[str, list[str]] = {}
    for r in data["rows"]:
        if r["unit"] not in units.setdefault(r["benchmark"], []):
            units[r["benchmark"]].append(r["unit"])
    slug = max(units, key=lambda s: len(units[s]))
    assert len(units[slug]) >= 2, "the fixture needs a benchmark with two units"
    return slug, units[slug]


def test_a_benchmark_with_more_units_than_shown_opens_page_by_page(
    client, cpu_alike_run, one_unit_at_a_time
):
    data = Aggregate.objects.page(Scope.COMPARE, "local", "docker")
    slug, units = many_units(data)
    first = client.get("/compare/?a=local&b=docker").content.decode()
    address = f"/compare/?a=local&amp;b=docker&amp;benchmark={slug}"
    assert f'the first 1: <a href="{address}">all {len(units)}</a>' in first
    assert f'id="{slug}-{units[0]}"' in first and f'id="{slug}-{units[1]}"' not in first
    seen = []
    for number, unit in enumerate(units, start=1):
        query = f"?a=local&b=docker&benchmark={slug}" + (f"&page={number}" if number > 1 else "")
        page = client.get("/compare/" + query).content.decode()
        assert f"units {number} to {number} of {len(units)}" in page
        assert ("next units" in page) == (number < len(units))
        answer = client.get("/api/v1/compare" + query).json()
        assert {r["unit"] for r in answer["page"]["rows"]} == {unit}
        assert len(answer["table"]["rows"]) == len(answer["page"]["rows"])
        seen += answer["table"]["rows"]
    # Every row of the benchmark, page by page, is the CSV's, in its order.
    rows = list(csv.reader(io.StringIO(client.get("/compare.csv?a=local&b=docker").text)))
    assert seen == [r for r in rows[1:] if r[0] == slug]


@pytest.mark.parametrize(
    "query",
    [
        "?a=local&b=docker&benchmark=nowhere",  # not a benchmark of the comparison
        "?a=local&b=docker&benchmark={slug}&page=99",  # beyond its last page
        "?a=local&b=docker&page=2",  # pages are a benchmark's
        "?a=local&b=docker&benchmark={slug}&page=02",  # not as the page's links write it
        "?benchmark={slug}",  # no pair
    ],
)
def test_a_part_of_a_comparison_that_does_not_exist_is_a_404(
    client, cpu_alike_run, one_unit_at_a_time, query
):
    slug, _ = many_units(Aggregate.objects.page(Scope.COMPARE, "local", "docker"))
    for path in ("/compare/", "/api/v1/compare"):
        response = client.get(path + query.format(slug=slug))
        assert response.status_code == 404, (path, query)
