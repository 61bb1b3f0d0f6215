"""One burst's figures from its per-request records (docs/methodology.md, "Burst").

A record holds `planned_ms`, `sent_ms`, `created_ms` and `ready_ms` (offsets from the burst's
start on the job host's monotonic clock; null where the request never got that far) and its
`outcome`. Requests answered `rate_limited` are counted apart: they are the provider's declared
limit speaking, so they leave the denominators of the ready times and of the success share.
"""

from __future__ import annotations

from collections.abc import Sequence

from stats.estimators import median, nearest_rank, percentile

OK, RATE_LIMITED = "ok", "rate_limited"
# The share of the tier's requests (rate-limited ones aside) whose ready time is reported.
READY_SHARES = {"first_ready_ms": 0, "p50_ready_ms": 50, "p95_ready_ms": 95, "last_ready_ms": 100}
QUARTILES = 4


def burst_figures(records: Sequence[dict]) -> dict[str, float]:
    """The burst's metrics by name; a figure the burst never reached (its 95 % ready when fewer
    sandboxes became ready) is left out rather than guessed."""
    if not records:
        raise ValueError("a burst has at least one request")
    limited = sum(r["outcome"] == RATE_LIMITED for r in records)
    counted = len(records) - limited
    ready = sorted(r["ready_ms"] for r in records if r["outcome"] == OK)
    figures: dict[str, float] = {"requests": len(records), "rate_limited": limited}
    if counted:
        figures["success_share"] = len(ready) / counted
        for name, share in READY_SHARES.items():
            rank = nearest_rank(share, counted)
            if rank <= len(ready):
                figures[name] = ready[rank - 1]
    if ready and ready[-1] > 0:
        figures["throughput_per_s"] = len(ready) / (ready[-1] / 1000)
    figures.update(quartile_tti(records))
    figures.update(scheduling_delay(records))
    return figures


def quartile_tti(records: Sequence[dict]) -> dict[str, float]:
    """The lower median TTI (ready minus sent) of each submission-order quartile's ready
    requests: a provider that serves the first requests fast and queues the rest shows it."""
    figures = {}
    n = len(records)
    for q in range(QUARTILES):
        # Rounded up, so a tier below four fills the first quartiles, not the last.
        part = records[-(-q * n // QUARTILES) : -(-(q + 1) * n // QUARTILES)]
        ttis = [r["ready_ms"] - r["sent_ms"] for r in part if r["outcome"] == OK]
        if ttis:
            figures[f"q{q + 1}_tti_ms"] = median(ttis)
    return figures


def scheduling_delay(records: Sequence[dict]) -> dict[str, float]:
    """How late the job host sent each request against its plan (sent minus planned)."""
    delays = [r["sent_ms"] - r["planned_ms"] for r in records if r["sent_ms"] is not None]
    if not delays:
        return {}
    return {
        "sched_delay_p50_ms": percentile(delays, 50),
        "sched_delay_p99_ms": percentile(delays, 99),
        "sched_delay_max_ms": max(delays),
    }


def planned_offsets_ms(tier: int, create_rate_per_s: float | None) -> list[float]:
    """Each request's planned send, from the burst's start: all at once, or one every 1/rate
    seconds on an account whose creation rate is declared (the methodology's spacing rule), so
    on 1 create/s the 8-tier is a ramp over 7 s."""
    if tier < 1:
        raise ValueError(f"a burst tier is a positive number of requests, got {tier}")
    if not create_rate_per_s:
        return [0.0] * tier
    return [i * 1000 / create_rate_per_s for i in range(tier)]


def ready_curve(bursts: Sequence[Sequence[dict]]) -> list[tuple[float, float]]:
    """The mean number of ready sandboxes against time from the burst's start, over several
    bursts of one tier: a step up by 1/len(bursts) at each ready time of any of them, from
    (0, 0). A provider that serves the first requests fast and queues the rest shows a knee."""
    if not bursts:
        return []
    ready = sorted(r["ready_ms"] for burst in bursts for r in burst if r["outcome"] == OK)
    step = 1 / len(bursts)
    return [(0.0, 0.0), *((ms, (i + 1) * step) for i, ms in enumerate(ready))]


def tier_point(figures: Sequence[dict]) -> dict:
    """One provider's point of the tier sweep from its bursts' figures (burst_figures): the
    median throughput and the median 95 % ready time (None where no burst reached it), and
    the rate-limited requests counted apart."""
    throughput = [f["throughput_per_s"] for f in figures if "throughput_per_s" in f]
    p95 = [f["p95_ready_ms"] for f in figures if "p95_ready_ms" in f]
    return {
        "bursts": len(figures),
        "throughput_per_s": median(throughput) if throughput else None,
        "p95_ready_ms": median(p95) if p95 else None,
        "requests": int(sum(f.get("requests", 0) for f in figures)),
        "rate_limited": int(sum(f.get("rate_limited", 0) for f in figures)),
    }
