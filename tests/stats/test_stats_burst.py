"""A burst's figures from its per-request records (stats/burst.py)."""

import pytest

from stats.burst import burst_figures, planned_offsets_ms


def request(ready, *, sent=0.0, planned=0.0, outcome="ok"):
    return {
        "planned_ms": planned,
        "sent_ms": sent,
        "created_ms": None if ready is None else ready / 2,
        "ready_ms": ready if outcome == "ok" else None,
        "outcome": outcome,
        "cause": "",
    }


def test_ready_times_are_nearest_ranks_of_the_tier_not_of_the_ready_ones():
    records = [request(float(ms)) for ms in range(100, 2100, 100)]  # 20 ready, 100..2000 ms
    figures = burst_figures(records)
    assert figures["first_ready_ms"] == 100
    assert figures["p50_ready_ms"] == 1000  # rank 10 of 20
    assert figures["p95_ready_ms"] == 1900  # rank 19 of 20
    assert figures["last_ready_ms"] == 2000
    assert figures["throughput_per_s"] == 10.0  # 20 ready in 2 s
    assert figures["success_share"] == 1.0

    records[-2:] = [request(None, outcome="provider_error"), request(None, outcome="stuck")]
    failed = burst_figures(records)
    assert failed["success_share"] == 0.9
    assert "last_ready_ms" not in failed and "p95_ready_ms" not in failed  # never reached
    assert failed["p50_ready_ms"] == 1000


def test_rate_limited_requests_are_counted_apart_from_failures():
    records = [request(100.0), request(None, outcome="rate_limited"), request(300.0)]
    records.append(request(None, outcome="rate_limited"))
    figures = burst_figures(records)
    assert figures["rate_limited"] == 2 and figures["requests"] == 4
    assert figures["success_share"] == 1.0  # 2 of the 2 requests the limit let through
    assert figures["last_ready_ms"] == 300.0


def test_each_submission_quartile_has_its_own_lower_median_tti():
    # Sent 10 ms apart; the later half waits longer: a queue behind the first requests.
    records = [request(10.0 * i + (50 if i < 4 else 500), sent=10.0 * i) for i in range(8)]
    figures = burst_figures(records)
    assert [figures[f"q{q}_tti_ms"] for q in range(1, 5)] == [50, 50, 500, 500]
    single = burst_figures([request(70.0, sent=20.0)])
    assert single["q1_tti_ms"] == 50.0 and "q4_tti_ms" not in single


def test_the_scheduling_delay_is_sent_minus_planned():
    delays = [0.5, 1.0, 1.5, 30.0]
    records = [
        request(900.0, sent=1000.0 * i + d, planned=1000.0 * i) for i, d in enumerate(delays)
    ]
    figures = burst_figures(records)
    assert figures["sched_delay_p50_ms"] == 1.0  # the lower median
    assert figures["sched_delay_p99_ms"] == 30.0 == figures["sched_delay_max_ms"]


def test_the_plan_is_all_at_once_or_paced_by_the_declared_rate():
    assert planned_offsets_ms(3, None) == [0.0, 0.0, 0.0]
    assert planned_offsets_ms(8, 1.0)[-1] == 7000.0  # a ramp over 7 s on 1 create/s
    assert planned_offsets_ms(3, 5.0) == [0.0, 200.0, 400.0]
    with pytest.raises(ValueError, match="positive"):
        planned_offsets_ms(0, None)
