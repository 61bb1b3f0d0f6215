"""An independent recomputation of a published run from its public raw data: plain numpy and
scipy, none of boxbench's statistics, compared with every number the materialized pages publish,
from the unit rows through the labels and workload values to the score tree.

The public file holds the successful trials and counts the other attempts (docs/raw-data.md);
that is all the recomputation reads. Importing it into an empty database publishes the same pages.
"""

import hashlib
import json
import math
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats as scipy_stats

from boxbench import publishing
from boxbench.models import Aggregate, Outcome, Run, Scope, Trial
from boxbench.rawdata import PUBLIC, export_jsonl, import_jsonl
from tests.support.web import explain_failures

pytestmark = pytest.mark.django_db

SECTIONS = ("workload_time", "workload_cost", "sandbox_operations", "machine_performance")


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


def read_public(text: str):
    """(header, trial lines, counts lines, reliability lines) of a public file, its trailer
    checked by hand."""
    raw = text.encode()
    head, _, last = raw.rstrip(b"\n").rpartition(b"\n")
    trailer = json.loads(last)
    assert trailer["type"] == "end"
    assert trailer["sha256"] == hashlib.sha256(head + b"\n").hexdigest()
    header, *lines = (json.loads(line) for line in head.splitlines())
    assert header["form"] == "public"
    trials = [line for line in lines if line["type"] == "trial"]
    counts = [line for line in lines if line["type"] == "counts"]
    reliability = [line for line in lines if line["type"] == "reliability"]
    assert len(trials) + len(counts) + len(reliability) == len(lines)
    assert trailer["trials"] == len(trials)
    # Nothing private: no unsuccessful trial, no replacement link.
    assert {t["outcome"] for t in trials} == {"success"}
    assert all(t["replaces"] is None for t in trials)
    return header, trials, counts, reliability


class Raw:
    """The public file grouped as the pages are: values, costs and counts per (benchmark, unit,
    provider), in execution order."""

    def __init__(self, text: str):
        self.header, trials, counts, self.reliability = read_public(text)
        self.benchmarks = {b["slug"]: b for b in self.header["benchmarks"]}
        self.sourced = {
            p["slug"]: bool(p["pricing"].get("provider_sourced")) for p in self.header["providers"]
        }
        self.values = defaultdict(list)
        self.costs = defaultdict(list)
        self.outcomes = defaultdict(dict)
        self.stages = defaultdict(lambda: defaultdict(list))  # key: stage: values (None kept)
        for t in sorted(trials, key=lambda t: t["seq"]):
            key = (t["benchmark"], t["unit"], t["provider"])
            self.values[key].append(t["metrics"][self.benchmarks[t["benchmark"]]["metric"]])
            for stage in self.benchmarks[t["benchmark"]]["stage_names"]:
                self.stages[key][stage].append(t["stages"].get(stage))
            self.costs[key].append(t["cost_usd"])
            self.outcomes[key]["success"] = self.outcomes[key].get("success", 0) + 1
        self.unreplaced = defaultdict(int)
        for c in counts:
            key = (c["benchmark"], c["unit"], c["provider"])
            self.outcomes[key].update(c["outcomes"])
            self.unreplaced[key] = c["unreplaced_provider_failures"]
        for slug in self.benchmarks:
            # The declared floor applies: the fixture's plan names no subset of units.
            assert slug not in self.header["manifest"].get("benchmarks", {})

    def units(self, slug):
        return [u["slug"] for u in self.benchmarks[slug]["units"]]

    def total(self, slug, provider):
        return sum(len(self.values.get((slug, u, provider), [])) for u in self.units(slug))

    def ranked(self, slug, provider):
        return self.total(slug, provider) >= self.benchmarks[slug]["ranking_floor"]

    def mean_cost(self, key):
        costs = self.costs.get(key, [])
        if not costs or any(c is None for c in costs):
            return None
        return math.fsum(costs) / len(costs)


def expected_label(raw: Raw, slug: str, provider: str, unreplaced: int):
    n, floor = raw.total(slug, provider), raw.benchmarks[slug]["ranking_floor"]
    if n >= floor:
        return "Provider Failures" if unreplaced else None
    explained = unreplaced and n + unreplaced >= floor
    return "Provider Failures" if explained else "Not Ranked"


def check_unit_rows(raw: Raw) -> int:
    checked = 0
    for slug, benchmark in raw.benchmarks.items():
        lower = benchmark["direction"] == "lower"
        for unit in raw.units(slug):
            page = Aggregate.objects.page(Scope.UNIT, slug, unit)
            if page is None:  # held back or nothing measured
                continue
            for row in page["rows"]:
                key = (slug, unit, row["provider"])
                values = raw.values.get(key, [])
                assert row["n"] == len(values)
                assert row["outcomes"] == raw.outcomes.get(key, {})
                assert row["unreplaced_failures"] == raw.unreplaced.get(key, 0)
                if not values:
                    assert row["median"] is None
                    continue
                assert row["median"] == pytest.approx(nearest_rank(values, 50), rel=1e-12)
                assert row["mean"] == pytest.approx(math.fsum(values) / len(values), rel=1e-12)
                assert row["mean_cost_usd"] == pytest.approx(raw.mean_cost(key), rel=1e-12)
                if len(values) >= 20:
                    tail = nearest_rank(values, 95 if lower else 5)
                    assert (row["tail"], row["tail_kind"]) == (
                        pytest.approx(tail),
                        "p95" if lower else "p5",
                    )
                else:
                    assert row["tail"] == pytest.approx(max(values) if lower else min(values))
                if benchmark["unit"] == "ms":
                    low, high = bootstrap_interval(values)
                    assert (row["ci_low"], row["ci_high"]) == (
                        pytest.approx(low),
                        pytest.approx(high),
                    )
                else:
                    assert row["ci_low"] is None and row["ci_high"] is None
                assert row["ranked"] == raw.ranked(slug, row["provider"])
                checked += 1
    return checked


def check_stage_rows(raw: Raw) -> int:
    """Every staged unit row's Time bar (stage medians, scaled widths, scale), its Cost bar (each
    stage's cost: the shown cost times its share of the Time bar, widths scaled the same way) and
    its derived views (per-trial sums of each stage subset), from the public file's stages."""
    checked = 0
    for slug, benchmark in raw.benchmarks.items():
        if not benchmark["stage_names"]:
            continue
        for unit in raw.units(slug):
            page = Aggregate.objects.page(Scope.UNIT, slug, unit)
            for row in page["rows"] if page else []:
                key = (slug, unit, row["provider"])
                columns = {
                    stage: np.array([np.nan if v is None else v for v in values], dtype=float)
                    for stage, values in raw.stages[key].items()
                    if any(v is not None for v in values)
                }
                if not columns:
                    assert row["segments"] == []
                    continue
                medians = {
                    stage: nearest_rank(list(c[np.isfinite(c)]), 50) for stage, c in columns.items()
                }
                total = nearest_rank(raw.values[key], 50)
                scale = total / math.fsum(medians.values())
                assert row["scale"] == pytest.approx(scale, rel=1e-12)
                assert row["stage_medians"] == pytest.approx(medians, rel=1e-12)
                widths = {s["stage"]: s["width"] for s in row["segments"]}
                assert widths == pytest.approx({k: m * scale for k, m in medians.items()})
                # The Cost view's rows (workloads only); a provider without a provider-sourced
                # cost has no bar there.
                cost_rows = {r["provider"]: r for r in page["cost_rows"]}
                cost_row = cost_rows.get(row["provider"])
                cost = raw.mean_cost(key) if raw.sourced[row["provider"]] else None
                if cost_row is None:
                    assert not raw.benchmarks[slug]["section"].startswith("workload")
                elif cost is None:
                    assert cost_row["stage_costs"] is None
                else:
                    bar = cost_row["stage_costs"]
                    assert bar["total_cost"] == pytest.approx(cost, rel=1e-12)
                    labels = {s["stage"]: s["cost"] for s in bar["segments"]}
                    # The shown cost is a mean: shared by the stage means, it fills exactly.
                    means = {k: c[np.isfinite(c)].mean() for k, c in columns.items()}
                    mean_sum = math.fsum(means.values())
                    shares = {k: cost * m / mean_sum for k, m in means.items()}
                    assert labels == pytest.approx(shares, rel=1e-12)
                    widths = {s["stage"]: s["width"] for s in bar["segments"]}
                    assert widths == pytest.approx(shares, rel=1e-12)
                for key_of_view, view in row["derived"].items():
                    selected = key_of_view.split("+")
                    if any(stage not in columns for stage in selected):
                        assert view["trials"] == 0 and view["median"] is None  # never recorded
                        continue
                    matrix = np.array([columns[stage] for stage in selected])
                    sums = matrix[:, np.isfinite(matrix).all(axis=0)].sum(axis=0)
                    assert view["trials"] == sums.size
                    if sums.size:
                        assert view["median"] == pytest.approx(nearest_rank(list(sums), 50))
                    else:
                        assert view["median"] is None
                checked += 1
    return checked


def gmean_with_worst(per_provider: dict[str, dict[str, float]]) -> dict[str, tuple]:
    """The workload value: a geometric mean over the units anyone completed, a missing unit taking
    the worst value recorded on it; (value, substituted units) per provider."""
    completed = sorted({u for by_unit in per_provider.values() for u in by_unit})
    worst = {u: max(m[u] for m in per_provider.values() if u in m) for u in completed}
    return {
        provider: (
            float(scipy_stats.gmean([own.get(u, worst[u]) for u in completed])),
            [u for u in completed if u not in own],
        )
        for provider, own in per_provider.items()
        if own
    }


def check_benchmark_rows(raw: Raw) -> dict:
    """Each benchmark page's rows; returns the workload values {kind: {benchmark: {provider}}}."""
    workloads = {"time": {}, "cost": {}}
    for slug, benchmark in raw.benchmarks.items():
        summary = Aggregate.objects.page(Scope.BENCHMARK, slug)
        if summary is None:
            continue
        units = raw.units(slug)
        medians, costs = defaultdict(dict), defaultdict(dict)
        for (b, unit, provider), values in raw.values.items():
            if b == slug and values:
                medians[provider][unit] = nearest_rank(values, 50)
                if raw.sourced[provider]:
                    costs[provider][unit] = raw.mean_cost((b, unit, provider))
        times, cost_values = gmean_with_worst(medians), gmean_with_worst(costs)
        for row in summary["rows"]:
            provider = row["provider"]
            if provider not in medians:
                continue
            unreplaced = sum(raw.unreplaced.get((slug, u, provider), 0) for u in units)
            assert row["n"] == raw.total(slug, provider)
            assert row["label"] == expected_label(raw, slug, provider, unreplaced)
            ranked = raw.ranked(slug, provider)
            if len(units) > 1 and ranked:
                value, substituted = times[provider]
                assert row["workload_value"] == pytest.approx(value, rel=1e-12)
                assert row["substituted_units"] == substituted
                cost = (
                    cost_values[provider][0]
                    if set(costs[provider]) == set(medians[provider])
                    else None
                )
                assert row["workload_cost_usd"] == pytest.approx(cost, rel=1e-12)
            elif len(units) == 1 and ranked:
                assert row["workload_value"] == pytest.approx(medians[provider][units[0]])
            else:
                assert row["workload_value"] is None
            if benchmark["section"] == "workload":
                workloads["time"].setdefault(slug, {})[provider] = row["workload_value"]
                workloads["cost"].setdefault(slug, {})[provider] = row["workload_cost_usd"]
    return workloads


def unit_score(values: dict[str, float], lower: bool) -> dict[str, float]:
    if not values:
        return {}
    best = min(values.values()) if lower else max(values.values())
    return {p: 100 * (best / v if lower else v / best) for p, v in values.items()}


def mean_with_zeros(children: list[dict[str, float]], count: int | None = None) -> dict[str, float]:
    scored = [c for c in children if c]
    providers = {p for c in scored for p in c}
    return {p: sum(c.get(p, 0.0) for c in scored) / (count or len(scored)) for p in providers}


def competition_ranks(scores: dict[str, float]) -> dict[str, int]:
    rounded = {p: round(s, 9) for p, s in scores.items()}
    return {p: 1 + sum(other > s for other in rounded.values()) for p, s in rounded.items()}


def node(key, level, scores, children=()):
    return {
        "key": key,
        "level": level,
        "scores": scores,
        "ranks": competition_ranks(scores),
        "children": list(children),
    }


def expected_tree(raw: Raw) -> dict:
    """overall -> sections -> benchmarks -> units, as docs/methodology.md defines the scores:
    leaves from the ranked providers' medians (and, for workloads, their provider-sourced mean
    costs), every other node the mean of its children with a missing child adding 0."""
    leaves = {s: defaultdict(list) for s in SECTIONS}
    for slug, benchmark in raw.benchmarks.items():
        if Aggregate.objects.page(Scope.BENCHMARK, slug) is None or not benchmark["charted"]:
            continue  # a benchmark recorded without charting it scores nothing
        for unit in raw.units(slug):
            ranked = {
                p: raw.values[(slug, unit, p)]
                for (b, u, p) in list(raw.values)
                if (b, u) == (slug, unit) and raw.values[(b, u, p)] and raw.ranked(slug, p)
            }
            medians = {p: nearest_rank(v, 50) for p, v in ranked.items()}
            if benchmark["section"] == "workload":
                leaves["workload_time"][slug].append(node(unit, "unit", unit_score(medians, True)))
                costs = {p: raw.mean_cost((slug, unit, p)) for p in ranked if raw.sourced[p]}
                costs = {p: c for p, c in costs.items() if c}
                leaves["workload_cost"][slug].append(node(unit, "unit", unit_score(costs, True)))
            else:
                lower = benchmark["direction"] == "lower"
                scores = unit_score(medians, lower)
                leaves[benchmark["section"]][slug].append(node(unit, "unit", scores))
    sections = []
    for section in SECTIONS:
        benchmarks = [
            node(slug, "benchmark", mean_with_zeros([u["scores"] for u in units]), units)
            for slug, units in leaves[section].items()
        ]
        scores = mean_with_zeros([b["scores"] for b in benchmarks])
        sections.append(node(section, "section", scores, benchmarks))
    overall = mean_with_zeros([s["scores"] for s in sections], count=len(SECTIONS))
    return node("overall", "overall", overall, sections)


def assert_same_tree(published: dict, expected: dict, path="overall"):
    assert (published["key"], published["level"]) == (expected["key"], expected["level"]), path
    assert published["scores"] == pytest.approx(expected["scores"], rel=1e-12), path
    assert published["ranks"] == expected["ranks"], path
    published_children = sorted(published["children"], key=lambda c: c["key"])
    expected_children = sorted(expected["children"], key=lambda c: c["key"])
    assert [c["key"] for c in published_children] == [c["key"] for c in expected_children], path
    for mine, theirs in zip(published_children, expected_children, strict=True):
        assert_same_tree(mine, theirs, f"{path}/{theirs['key']}")


def check_overview(raw: Raw, workloads: dict) -> None:
    overview = Aggregate.objects.page(Scope.OVERVIEW)
    assert_same_tree(overview["tree"], expected_tree(raw))
    for kind, by_benchmark in workloads.items():
        providers = {p for per in by_benchmark.values() for p in per}
        for provider in providers:
            values = [per.get(provider) for per in by_benchmark.values()]
            want = None if None in values else float(scipy_stats.gmean(values))
            assert overview["composites"][kind][provider] == pytest.approx(want, rel=1e-12)


def wilson(failures: int, attempts: int) -> tuple[float, float]:
    """The 95 % Wilson score interval, by its formula."""
    z = scipy_stats.norm.ppf(0.975)
    p, n = failures / attempts, attempts
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def expected_rate(entries: list[dict], floor: int) -> dict:
    """One figure of the Reliability page from reliability-line entries added up: the
    provider's own failures (owner provider or unknown) over every attempt."""
    attempts = sum(e["attempts"] for e in entries)
    by_owner, by_class = defaultdict(int), defaultdict(int)
    for entry in entries:
        for owner, classes in entry["failures"].items():
            for cls, n in classes.items():
                by_owner[owner] += n
                by_class[cls] += n
    failures = by_owner["provider"] + by_owner["unknown"]
    measured = attempts >= floor
    low, high = wilson(failures, attempts) if measured else (None, None)
    return {
        "attempts": attempts,
        "failures": failures,
        "rate": failures / attempts if measured else None,
        "ci_low": low,
        "ci_high": high,
        "by_owner": {k: v for k, v in by_owner.items() if v},
        "by_class": {k: v for k, v in by_class.items() if v},
    }


def check_reliability(raw: Raw) -> int:
    """Each provider's failure rates, intervals and splits on the Reliability page, overall and
    per operation, from the public file's reliability lines (the fixture is one run)."""
    page = Aggregate.objects.page(Scope.RELIABILITY)
    lines = {line["provider"]: line for line in raw.reliability}
    assert [row["provider"] for row in page["providers"]] == sorted(lines)
    checked = 0
    for row in page["providers"]:
        line = lines[row["provider"]]
        assert row["unplaced"] == line["unplaced"]
        figures = {"overall": (row["overall"], list(line["operations"].values()))}
        for operation, entry in line["operations"].items():
            figures[operation] = (row["operations"][operation], [entry])
        assert set(row["operations"]) == set(line["operations"])
        for shown, entries in figures.values():
            want = expected_rate(entries, page["floor"])
            assert {k: v for k, v in shown["by_owner"].items() if v} == want.pop("by_owner")
            assert {k: v for k, v in shown["by_class"].items() if v} == want.pop("by_class")
            assert {k: shown[k] for k in want} == pytest.approx(want, rel=1e-9)
            checked += 1
    return checked


def test_the_public_raw_data_recomputes_every_published_number(published_run):
    raw = Raw("".join(export_jsonl(published_run, PUBLIC)))
    assert check_unit_rows(raw) == 14  # every (unit, provider) row of the fixture with a success
    assert check_stage_rows(raw) == 11  # every staged unit row with a success
    workloads = check_benchmark_rows(raw)
    assert workloads["time"]["deepswe"]  # the fixture's workload has values to compose
    check_overview(raw, workloads)
    assert check_reliability(raw) > len(raw.reliability)  # overall and operations, each provider


def published_pages() -> dict:
    """Every materialized page but the run's (which also holds resolution times), without the
    publication time."""

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "published_at"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    rows = Aggregate.objects.exclude(scope=Scope.RUN).values_list("scope", "key", "data")
    pages = {(scope, key): strip(data) for scope, key, data in rows}
    run_pages = Aggregate.objects.filter(scope=Scope.RUN).values_list("key", "data")
    pages.update({("run-cells", key): data["cells"] for key, data in run_pages})
    return pages


def fail_every_cpu_trial_of_boat(run):
    """Boat known on CPU only by counts once exported publicly: its row and label must stay."""
    Trial.objects.filter(run=run, provider__slug="boat", benchmark__slug="cpu").update(
        outcome=Outcome.PROVIDER_FAILURE, owner="provider", cause="sandbox stopped answering"
    )


@pytest.mark.parametrize("change", [None, fail_every_cpu_trial_of_boat])
def test_importing_the_public_raw_data_publishes_the_same_pages(tmp_path, imported_run, change):
    if change:
        change(imported_run)
    explain_failures(imported_run)
    published_run = publishing.publish(imported_run)
    before = published_pages()
    path = tmp_path / "public.jsonl"
    path.write_text("".join(export_jsonl(published_run, PUBLIC)), encoding="utf-8")
    Run.objects.all().delete()
    Aggregate.objects.all().delete()
    result = import_jsonl(path)
    assert result.form == "public" and result.counted == (21 if change else 1)
    explain_failures(result.run)
    publishing.publish(result.run)
    assert published_pages() == before
    # Exported again, the public form is the same bytes: counts stay counts.
    assert "".join(export_jsonl(result.run, PUBLIC)) == path.read_text(encoding="utf-8")
    if change:
        cpu = Aggregate.objects.page(Scope.BENCHMARK, "cpu")
        boat = next(r for r in cpu["rows"] if r["provider"] == "boat")
        assert (boat["label"], boat["n"]) == ("Provider Failures", 0)
