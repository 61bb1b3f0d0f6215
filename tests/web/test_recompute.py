"""An independent recomputation of a published run from its raw data: plain numpy and scipy,
none of boxbench's statistics, compared with every number the materialized pages publish."""

import json
import math
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats as scipy_stats

from boxbench.models import Aggregate, Scope
from boxbench.rawdata import export_jsonl

pytestmark = pytest.mark.django_db


def nearest_rank(values, p):
    ordered = sorted(values)
    # Exact: p is a whole number here, so p * n / 100 needs no floating point care.
    return ordered[max(1, -(-p * len(ordered) // 100)) - 1]


def bootstrap_interval(values):
    x = np.asarray(values)
    n = x.size
    idx = np.random.default_rng(0).integers(0, n, size=(10000, n))
    medians = np.sort(np.sort(x[idx], axis=1)[:, (n - 1) // 2])
    return float(medians[250 - 1]), float(medians[9750 - 1])


def read_raw(lines):
    header, *trials = (json.loads(line) for line in lines)
    assert trials[-1]["type"] == "end"  # the trailer: count and digest of the lines before it
    return header, trials[:-1]


def test_the_public_raw_data_recomputes_every_published_number(client, published_run):
    header, trials = read_raw("".join(export_jsonl(published_run)).splitlines())
    benchmarks = {b["slug"]: b for b in header["benchmarks"]}
    cells = defaultdict(list)
    failures = defaultdict(int)
    for t in sorted(trials, key=lambda t: t["seq"]):
        key = (t["benchmark"], t["unit"], t["provider"])
        if t["outcome"] == "success":
            cells[key].append(t["metrics"][benchmarks[t["benchmark"]]["metric"]])
        elif t["outcome"] == "provider_failure":
            failures[key] += 1
    checked = 0
    for slug, benchmark in benchmarks.items():
        lower = benchmark["direction"] == "lower"
        unit_slugs = [u["slug"] for u in benchmark["units"]]
        medians = {}
        for unit in unit_slugs:
            page = Aggregate.objects.page(Scope.UNIT, slug, unit)
            if page is None:  # held back or nothing measured
                continue
            for row in page["rows"]:
                values = cells.get((slug, unit, row["provider"]), [])
                assert row["n"] == len(values)
                if not values:
                    assert row["median"] is None
                    continue
                median = nearest_rank(values, 50)
                assert row["median"] == pytest.approx(median, rel=1e-12)
                medians.setdefault(row["provider"], {})[unit] = median
                assert row["mean"] == pytest.approx(math.fsum(values) / len(values), rel=1e-12)
                if len(values) >= 20:
                    tail = nearest_rank(values, 95 if lower else 5)
                    assert (row["tail"], row["tail_kind"]) == (
                        pytest.approx(tail),
                        "p95" if lower else "p5",
                    )
                else:
                    worst = max(values) if lower else min(values)
                    assert row["tail"] == pytest.approx(worst)
                if benchmark["unit"] == "ms":
                    low, high = bootstrap_interval(values)
                    assert (row["ci_low"], row["ci_high"]) == (
                        pytest.approx(low),
                        pytest.approx(high),
                    )
                else:
                    assert row["ci_low"] is None and row["ci_high"] is None
                checked += 1
        summary = Aggregate.objects.page(Scope.BENCHMARK, slug)
        if summary is None:
            continue
        floor = benchmark["ranking_floor"]
        completed = {u for by_unit in medians.values() for u in by_unit}
        for row in summary["rows"]:
            provider = row["provider"]
            if provider not in medians:
                continue
            n = sum(len(cells.get((slug, u, provider), [])) for u in unit_slugs)
            unreplaced = sum(failures.get((slug, u, provider), 0) for u in unit_slugs)
            assert row["n"] == n
            ranked = n >= floor
            if ranked:
                assert row["label"] == ("Provider Failures" if unreplaced else None)
            else:
                explained = unreplaced and n + unreplaced >= floor
                assert row["label"] == ("Provider Failures" if explained else "Not Ranked")
            if len(unit_slugs) > 1 and ranked and lower:
                slowest = {u: max(m[u] for m in medians.values() if u in m) for u in completed}
                own = [medians[provider].get(u, slowest[u]) for u in sorted(completed)]
                assert row["workload_value"] == pytest.approx(scipy_stats.gmean(own), rel=1e-12)
                assert row["substituted_units"] == sorted(completed - set(medians[provider]))
            elif len(unit_slugs) == 1 and ranked:
                assert row["workload_value"] == pytest.approx(medians[provider][unit_slugs[0]])
    assert checked == 14  # every (unit, provider) row of the fixture with a success
