"""The audit's input: one row per successful trial of a run, as the data frame stats.audit reads.

Its own module because it needs pandas: the web process imports publishing, which loads this
only when it audits.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from django.db.models import Count, Min

from boxbench.models import Direction, Outcome, Provider, Run, Trial
from runner import rules, store
from stats import audit as stats_audit
from stats import estimators
from stats.summary import PROBE


def audit_frame(run: Run) -> pd.DataFrame:
    """One row per successful trial and main metric, in the columns stats.audit expects.

    Facts come from the trial (placement, host load) and from its flag measurements (the
    physical-limit and cache checks, named as the audit's columns). On a multi-unit benchmark each
    value is divided by its (provider, unit) lower median: one pair pools units that differ by an
    order of magnitude, run in trace order, so raw values would correlate by construction.
    """
    # Probe readings (Isolation) are facts, not timings: drift, rounds, overlap and host load
    # say nothing about them, and a reading of 0 is a true answer the audit would refuse.
    trials = (
        Trial.objects.filter(run=run, outcome=Outcome.SUCCESS)
        .exclude(benchmark__statistic=PROBE)
        .order_by("seq")
    )
    # Declared by the provider (runner/declarations); absent means its sandboxes are remote.
    shares_job_host = {
        slug: (declaration or {}).get("shares_job_host") is True
        for slug, declaration in Provider.objects.filter(
            id__in=trials.values("provider_id")
        ).values_list("slug", "declaration")
    }
    # Round start closes when any trial of the round ends, whatever its outcome.
    first_ends = {
        (row["provider__slug"], row["benchmark__slug"], row["round"]): row["first_end"]
        for row in Trial.objects.filter(run=run, ended_at__isnull=False)
        .values("provider__slug", "benchmark__slug", "round")
        .order_by()
        .annotate(first_end=Min("ended_at"))
    }
    # Every trial counts here, whatever its outcome: a failing trial loads the job host too.
    shared_host = rules.cross_provider_overlaps(store.trial_spans(run))
    facts = {}
    values: dict = {}
    flags: dict = {}
    for (
        trial_id,
        provider,
        benchmark,
        unit,
        metric,
        direction,
        builds,
        seq,
        rnd,
        batch,
        started,
        ended,
        in_flight,
        placement,
        host_load,
        metrics,
    ) in trials.values_list(
        "id",
        "provider__slug",
        "benchmark__slug",
        "unit_id",
        "benchmark__metric",
        "benchmark__direction",
        "benchmark__steps_include_create_or_build",
        "seq",
        "round",
        "batch",
        "started_at",
        "ended_at",
        "in_flight",
        "placement",
        "host_load",
        "metrics",
    ):
        known = {**(placement or {}), **(host_load or {})}
        facts[trial_id] = (
            provider,
            benchmark,
            unit,
            metric,
            direction,
            builds,
            seq,
            rnd,
            batch,
            started,
            ended,
            in_flight,
            known,
        )
        found = {
            name: float(metrics[name])
            for name in stats_audit.FLAGS
            if metrics.get(name) is not None
        }
        if found:
            flags[trial_id] = found
        if metric not in stats_audit.FLAGS and metrics.get(metric) is not None:
            values[trial_id] = metrics[metric]
    records = []
    for trial_id, value in values.items():
        (
            provider,
            benchmark,
            unit,
            _,
            direction,
            builds,
            seq,
            rnd,
            batch,
            started,
            ended,
            in_flight,
            known,
        ) = facts[trial_id]
        record = {
            "provider": provider,
            "benchmark": benchmark,
            "unit": unit,
            "trial_id": str(trial_id),
            "value": value,
            "seq": seq,
            "round": rnd,
            "batch": batch or "",
            "started_at": started.timestamp() if started else np.nan,
            "ended_at": ended.timestamp() if ended else np.nan,
            "round_first_end": _seconds(first_ends.get((provider, benchmark, rnd))),
            "in_flight": np.nan if in_flight is None else in_flight,
            "lower_is_better": direction != Direction.HIGHER,
            "steps_create_or_build": builds,
            "shares_job_host": shares_job_host.get(provider, False),
            "other_chain_on_host": 1.0 if str(trial_id) in shared_host else 0.0,
        }
        for fact in AUDIT_FACTS:
            if fact in known:
                record[fact] = known[fact]
        record.update(flags.get(trial_id, {}))
        records.append(record)
    if not records:
        return pd.DataFrame(columns=list(stats_audit.REQUIRED))
    frame = pd.DataFrame.from_records(records)
    return _normalize_multi_unit(frame).drop(columns="unit")


def probe_pairs(run: Run) -> list[dict]:
    """The run's probe pairs (Isolation) as the report lists them: unassessed, with the reason.

    audit_frame leaves them out, since no check applies to facts; the report still names them,
    as it names every pair it did not assess.
    """
    reason = "probe readings are facts, not timings: no check applies"
    rows = (
        Trial.objects.filter(run=run, outcome=Outcome.SUCCESS, benchmark__statistic=PROBE)
        .values("provider__slug", "benchmark__slug", "benchmark__metric")
        .annotate(n=Count("id"))
        .order_by("provider__slug", "benchmark__slug")
    )
    return [
        {
            "provider": row["provider__slug"],
            "benchmark": row["benchmark__slug"],
            "metric": row["benchmark__metric"],
            "n": row["n"],
            "verdict": "unassessed",
            "detectable_effect": {"unbounded": True},
            "excluded_trials": [],
            "checks": {
                check: stats_audit.unassessed(check, reason).to_dict()
                for check in stats_audit.CHECKS
            },
        }
        for row in rows
    ]


def _seconds(moment) -> float:
    return moment.timestamp() if moment else np.nan


# Columns the frame computes itself rather than reading from a trial's placement or host load.
_DERIVED = (
    "round",
    "started_at",
    "ended_at",
    "round_first_end",
    "in_flight",
    "other_chain_on_host",
)
# Facts read from a trial's placement and host load; the flags come from its measurements.
AUDIT_FACTS = tuple(f for f in (*stats_audit.FLOAT_FACTS, "cpu_model") if f not in _DERIVED)


def _normalize_multi_unit(frame: pd.DataFrame) -> pd.DataFrame:
    """Divide each value by its (provider, benchmark, unit) lower median where the benchmark
    has several units, so the audit sees one comparable data point per trial."""
    units = frame.groupby("benchmark")["unit"].transform("nunique")
    multi = units > 1
    if not multi.any():
        return frame
    cell = frame.loc[multi].groupby(["provider", "benchmark", "unit"])["value"]
    medians = cell.transform(lambda v: estimators.median(v.to_numpy(dtype=float)))
    frame.loc[multi, "value"] = frame.loc[multi, "value"] / medians
    return frame
