import json

import numpy as np
import pandas as pd
import pytest

from stats.audit import CHECK_WORDS, CHECKS, audit
from tests.stats.synthetic import clean_pair


def checks_of(frame):
    report = audit(frame)
    json.dumps(report, allow_nan=False)  # the report must be strict JSON
    return report["pairs"][0]["checks"], report


def verdict(frame, check):
    return checks_of(frame)[0][check]["verdict"]


def test_it_passes_every_check_on_a_clean_run():
    checks, report = checks_of(clean_pair())
    assert {c["verdict"] for c in checks.values()} == {"pass"}
    assert report["pairs"][0]["verdict"] == "pass"
    assert len(checks) == 10


def test_it_lists_pairs_under_15_successes_as_unassessed():
    checks, report = checks_of(clean_pair(n=14))
    assert {c["verdict"] for c in checks.values()} == {"unassessed"}
    assert "14 successful trials" in checks["trend"]["reason"]
    assert report["pairs"][0]["verdict"] == "unassessed"


def test_it_refuses_missing_columns_and_bad_values():
    with pytest.raises(ValueError, match="seq"):
        audit(clean_pair().drop(columns="seq"))
    bad = clean_pair()
    bad.loc[3, "value"] = np.nan
    with pytest.raises(ValueError, match="positive and finite"):
        audit(bad)


# Trend ---------------------------------------------------------------------------------------


def test_it_fails_a_drift_of_8_percent_or_more():
    frame = clean_pair()
    frame["value"] *= 1 + 0.01 * np.arange(20)  # about +19 % from first to last trial
    check = checks_of(frame)[0]["trend"]
    assert check["verdict"] == "fail" and check["effect"] > 8


def test_it_notes_a_significant_drift_below_the_minimum():
    frame = clean_pair(spread=0.001)
    frame["value"] *= 1 + 0.002 * np.arange(20)  # about +4 %, very consistent
    check = checks_of(frame)[0]["trend"]
    assert check["verdict"] == "note" and 0 < check["effect"] < 8


def test_it_drops_an_untestable_flat_series_from_the_family():
    frame = clean_pair()
    frame["value"] = 100.0
    checks, report = checks_of(frame)
    assert checks["trend"]["verdict"] == "pass" and checks["trend"]["p"] is None
    assert report["families"]["failure"]["untestable"] >= 1


# First round and round start ------------------------------------------------------------------


def test_it_fails_a_first_round_15_percent_slower():
    frame = clean_pair()
    frame.loc[frame["round"] == 1, "value"] *= 1.3
    assert verdict(frame, "first_round") == "fail"


def test_the_first_round_check_gives_both_groups_medians():
    frame = clean_pair()
    frame.loc[frame["round"] == 1, "value"] *= 1.3
    first, later = frame[frame["round"] == 1]["value"], frame[frame["round"] != 1]["value"]
    details = checks_of(frame)[0]["first_round"]["details"]
    # Lower medians, as the effect's: an even group's is its lower middle value.
    assert details["median_a"] == sorted(first)[(len(first) - 1) // 2]
    assert details["median_b"] == sorted(later)[(len(later) - 1) // 2]
    assert (details["n_a"], details["n_b"]) == (len(first), len(later))


def test_it_leaves_first_round_unassessed_without_round_numbers():
    frame = clean_pair()
    frame["round"] = np.nan
    checks = checks_of(frame)[0]
    assert checks["first_round"]["verdict"] == "unassessed"
    assert "round numbers" in checks["first_round"]["reason"]


def test_it_fails_round_start_trials_15_percent_slower():
    frame = clean_pair(n=40)
    initial = frame["seq"] % 10 < 2  # two initial trials in each round of ten
    frame.loc[initial, "value"] *= 1.3
    assert verdict(frame, "round_start") == "fail"


def test_it_leaves_round_start_unassessed_when_every_trial_starts_together():
    frame = clean_pair()
    frame["ended_at"] = frame["started_at"] + 1e6
    checks = checks_of(frame)[0]
    assert checks["round_start"]["verdict"] == "unassessed"
    assert "needs 5 in each" in checks["round_start"]["reason"]


def test_round_start_closes_when_any_trial_of_the_round_ends_not_only_a_success():
    frame = clean_pair(n=40)
    initial = frame["seq"] % 10 < 2  # two trials per round start before the first success ends
    frame.loc[initial, "value"] *= 1.3
    assert verdict(frame, "round_start") == "fail"
    # A failed trial ended before either started: nothing in the round started before an end.
    frame["round_first_end"] = frame["round"] * 1000.0 - 1
    checks = checks_of(frame)[0]
    assert checks["round_start"]["verdict"] == "unassessed"  # no initial trials left


def test_it_reads_datetime_start_and_end_times():
    frame = clean_pair()
    frame["started_at"] = pd.to_datetime(frame["started_at"], unit="s", utc=True)
    frame["ended_at"] = pd.to_datetime(frame["ended_at"], unit="s", utc=True)
    assert verdict(frame, "round_start") == "pass"


# Lag 1 ---------------------------------------------------------------------------------------


def test_it_fails_strong_lag_one_autocorrelation():
    frame = clean_pair(n=40, spread=0.005)
    frame["value"] *= 1 + 0.2 * np.sin(np.arange(40) * 2 * np.pi / 20)
    check = checks_of(frame)[0]["lag1"]
    assert check["verdict"] == "fail"
    assert check["effect"] >= 0.5 and check["details"]["spread_percent"] >= 8


def test_it_judges_lag_one_on_any_number_of_consecutive_pairs_a_correlation_needs():
    frame = clean_pair()
    frame["batch"] = np.arange(20) // 5  # four batches: 16 consecutive pairs
    assert verdict(frame, "lag1") == "pass"
    # Ten batches of two: 10 consecutive pairs... and six of three or more, then singletons:
    # the spec sets no minimum, so a handful of pairs is judged (not unassessed).
    frame["batch"] = [0, 0, 0, 1, 1, 1, *range(2, 16)]  # 4 consecutive pairs
    assert verdict(frame, "lag1") in ("pass", "note", "fail")
    frame["batch"] = np.arange(20)  # every trial its own batch: no pair at all
    assert verdict(frame, "lag1") == "unassessed"


# Overlap -------------------------------------------------------------------------------------


def test_it_fails_overlapping_trials_15_percent_slower():
    frame = clean_pair()
    frame.loc[frame["in_flight"] >= 1, "value"] *= 1.3
    assert verdict(frame, "overlap") == "fail"


def test_it_leaves_overlap_unassessed_without_solo_trials():
    frame = clean_pair()
    frame["in_flight"] = 9.0
    assert verdict(frame, "overlap") == "unassessed"
    frame["in_flight"] = np.nan
    assert "not recorded" in checks_of(frame)[0]["overlap"]["reason"]


# Host saturated -------------------------------------------------------------------------------


def test_it_fails_saturated_trials_15_percent_slower():
    frame = clean_pair()
    hot = frame["seq"] % 2 == 0
    frame.loc[hot, "cpu_peak"] = 0.95
    frame.loc[hot, "value"] *= 1.3
    check = checks_of(frame)[0]["host_saturated"]
    assert check["verdict"] == "fail" and check["effect"] >= 15


def test_it_fails_a_saturated_share_of_a_quarter_without_a_test():
    frame = clean_pair(n=16)
    frame.loc[:3, "cpu_throttled"] = True  # 4 hot of 16: too few to test, share 0.25
    check = checks_of(frame)[0]["host_saturated"]
    assert check["verdict"] == "fail" and check["p"] is None
    assert check["details"]["saturated_share"] == 0.25


def test_it_notes_a_small_saturated_share():
    frame = clean_pair()
    frame.loc[:1, "mem_pressure_some_avg10"] = 12.0
    assert verdict(frame, "host_saturated") == "note"


def test_it_uses_available_memory_where_pressure_files_are_absent():
    frame = clean_pair(n=16)
    frame["mem_pressure_some_avg10"] = np.nan
    frame.loc[:3, "mem_available_kib"] = 100_000
    assert verdict(frame, "host_saturated") == "fail"


def test_it_leaves_host_saturated_unassessed_without_load_facts():
    frame = clean_pair()
    frame[["cpu_peak", "mem_pressure_some_avg10", "mem_available_kib"]] = np.nan
    frame["cpu_throttled"] = None
    assert verdict(frame, "host_saturated") == "unassessed"


def test_it_judges_host_saturated_when_sandboxes_share_the_job_host_too():
    frame = clean_pair(n=16)
    frame["cpu_peak"] = 1.0  # a CPU benchmark on the job host saturates it by design
    frame["shares_job_host"] = True
    check = checks_of(frame)[0]["host_saturated"]
    assert check["verdict"] == "fail" and check["details"]["shares_job_host"] is True


def test_the_saturated_share_counts_every_trial_of_the_pair():
    frame = clean_pair(n=20)
    frame.loc[:3, "cpu_throttled"] = True  # 4 hot
    frame.loc[14:, ["cpu_peak", "mem_pressure_some_avg10", "mem_available_kib"]] = np.nan
    check = checks_of(frame)[0]["host_saturated"]
    # 4 of 20 trials (0.2: a note), not 4 of the 14 with load facts (0.29: a failure).
    assert check["details"]["saturated_share"] == 0.2 and check["verdict"] == "note"


def test_it_still_fails_the_same_saturated_trials_on_a_remote_provider():
    frame = clean_pair(n=16)
    frame["cpu_peak"] = 1.0
    frame["shares_job_host"] = False
    assert verdict(frame, "host_saturated") == "fail"


# Tier split ----------------------------------------------------------------------------------


def test_it_fails_two_tiers_that_cluster_in_time():
    frame = clean_pair()
    frame.loc[10:, "value"] *= 2.0  # the second half of the run on a slow tier
    check = checks_of(frame)[0]["tier_split"]
    assert check["verdict"] == "fail"
    assert check["details"]["tier_ratio"] >= 1.8 and check["details"]["runs_z"] < 0


def test_it_only_notes_tiers_that_do_not_cluster_in_time():
    frame = clean_pair()
    frame.loc[frame["seq"] % 2 == 1, "value"] *= 2.0  # alternating: placement, not time
    check = checks_of(frame)[0]["tier_split"]
    assert check["verdict"] == "note" and "placement" in check["reason"]


def test_it_notes_a_clustered_split_with_a_small_ratio():
    frame = clean_pair(spread=0.005)
    frame.loc[10:, "value"] *= 1.4
    check = checks_of(frame)[0]["tier_split"]
    assert check["verdict"] == "note" and check["details"]["tier_ratio"] < 1.8


# Host type -----------------------------------------------------------------------------------


def test_it_notes_a_host_type_20_percent_different_and_never_fails():
    frame = clean_pair()
    other = frame["seq"] >= 14
    frame.loc[other, "cpu_model"] = "Xeon"
    frame.loc[other, "value"] *= 1.5
    checks, report = checks_of(frame)
    assert checks["host_type"]["verdict"] == "note"
    assert report["families"]["host_type"]["size"] == 1


def test_it_passes_host_types_that_agree():
    frame = clean_pair()
    frame.loc[frame["seq"] >= 14, "cpu_model"] = "Xeon"
    assert verdict(frame, "host_type") == "pass"


def test_it_ignores_trials_with_partial_placement_facts():
    frame = clean_pair()
    frame["cpu_model"] = frame["cpu_model"].astype(object)
    frame.loc[:4, "cpu_model"] = None
    frame.loc[5:8, "cpu_count"] = np.nan
    assert verdict(frame, "host_type") == "pass"


def test_it_leaves_host_type_unassessed_without_placement_facts():
    frame = clean_pair().drop(columns="cpu_model")
    assert verdict(frame, "host_type") == "unassessed"


# Outliers ------------------------------------------------------------------------------------


def test_it_excludes_an_unexplained_better_side_outlier_and_fails():
    frame = clean_pair()
    frame.loc[7, "value"] = 30.0
    checks, report = checks_of(frame)
    assert checks["outliers"]["verdict"] == "fail" and checks["outliers"]["p"] is None
    [excluded] = report["pairs"][0]["excluded_trials"]
    assert excluded["trial_id"] == "p-b-7" and "better-side" in excluded["reason"]


def test_it_keeps_and_notes_a_slow_spike():
    frame = clean_pair()
    frame.loc[7, "value"] = 400.0
    checks, report = checks_of(frame)
    assert checks["outliers"]["verdict"] == "note" and "slow spike" in checks["outliers"]["reason"]
    assert report["pairs"][0]["excluded_trials"] == []


def test_it_keeps_a_better_side_value_its_cache_check_explains():
    frame = clean_pair()
    frame.loc[7, ["value", "flag_cached_direct_read"]] = [30.0, True]
    assert verdict(frame, "outliers") == "note"


def test_it_keeps_a_better_side_create_or_build_value_as_warm_pool():
    frame = clean_pair()
    frame["steps_create_or_build"] = True
    frame.loc[7, "value"] = 30.0
    check = checks_of(frame)[0]["outliers"]
    assert check["verdict"] == "note" and "warm pool" in check["reason"]
    frame.loc[7, "linked_to_earlier"] = True
    assert verdict(frame, "outliers") == "fail"


def test_it_treats_higher_is_better_values_below_the_median_as_slow_spikes():
    frame = clean_pair()
    frame["lower_is_better"] = False
    frame.loc[7, "value"] = 30.0
    assert verdict(frame, "outliers") == "note"


def test_it_excludes_nothing_when_extremes_are_not_isolated():
    frame = clean_pair()
    frame.loc[[3, 7], "value"] = 30.0  # two extremes, the limit at n = 20 is one
    checks, report = checks_of(frame)
    assert checks["outliers"]["verdict"] == "note"
    assert report["pairs"][0]["excluded_trials"] == []


def test_it_handles_a_zero_robust_sigma():
    frame = clean_pair()
    frame["value"] = 100.0
    frame.loc[7, "value"] = 40.0  # 2.5x away; sigma is 0 with 19 equal values
    assert verdict(frame, "outliers") == "fail"


# Cache flags ---------------------------------------------------------------------------------


def test_it_states_a_throughput_ceiling_firing_in_15_percent_of_trials():
    frame = clean_pair()
    frame.loc[:3, "flag_throughput_ceiling"] = True  # 4 of 20
    check = checks_of(frame)[0]["cache_flags"]
    assert check["verdict"] == "note"
    assert check["details"]["page_statements"] == ["flag_throughput_ceiling"]


def test_it_notes_cpu_bound_runs_and_passes_rare_flags():
    frame = clean_pair()
    frame.loc[:3, "flag_cpu_bound"] = True
    assert checks_of(frame)[0]["cache_flags"]["details"]["notes"] == ["flag_cpu_bound"]
    frame = clean_pair()
    frame.loc[:1, "flag_throttled"] = True  # 10 %
    assert verdict(frame, "cache_flags") == "pass"


def test_it_leaves_cache_flags_unassessed_when_none_was_recorded():
    frame = clean_pair().drop(columns=[c for c in clean_pair() if c.startswith("flag_")])
    assert verdict(frame, "cache_flags") == "unassessed"


# Correction and the whole run -----------------------------------------------------------------


def test_it_corrects_across_all_pairs_and_reports_the_family():
    frames = [clean_pair(provider=f"p{i}", seed=i) for i in range(3)]
    report = audit(pd.concat(frames, ignore_index=True))
    family = report["families"]["failure"]
    assert family["size"] == 15  # trend, first round, round start, lag 1, overlap per pair
    assert [p["provider"] for p in report["pairs"]] == ["p0", "p1", "p2"]
    for pair in report["pairs"]:
        for check in pair["checks"].values():
            assert check["q"] is None or check["q"] >= check["p"]


def test_it_reports_a_detectable_effect_per_pair():
    effect = audit(clean_pair())["pairs"][0]["detectable_effect"]
    assert (effect["n1"], effect["n2"], effect["unbounded"]) == (10, 10, False)
    assert effect["cohen_d"] > 1 and effect["percent_of_median"] > 0


def test_it_splits_pairs_by_metric_when_given():
    frame = pd.concat([clean_pair().assign(metric="total"), clean_pair().assign(metric="read")])
    report = audit(frame)
    assert [p["metric"] for p in report["pairs"]] == ["read", "total"]


def test_audit_settings_round_trip_and_refuse_what_they_do_not_know():
    from stats.audit import DEFAULT_SETTINGS, AuditSettings

    restored, missing = AuditSettings.from_dict(DEFAULT_SETTINGS.to_dict())
    assert restored == DEFAULT_SETTINGS and missing == []
    partial, missing = AuditSettings.from_dict({"q_level": 0.01})
    assert partial.q_level == 0.01 and "min_group" in missing
    assert partial.differences(DEFAULT_SETTINGS) == {"q_level": {"used": 0.01, "current": 0.05}}
    for bad in ({"q_levels": 0.05}, {"q_level": True}, {"min_effect": {"trend": 8.0}}):
        with pytest.raises(ValueError):
            AuditSettings.from_dict(bad)


def test_stricter_settings_change_the_verdict_and_are_recorded():
    from stats.audit import AuditSettings, audit

    rng = np.random.default_rng(1)
    values = 100 * (1 + 0.02 * np.arange(30)) * rng.lognormal(0, 0.01, 30)
    frame = pd.DataFrame(
        {
            "provider": "p",
            "benchmark": "b",
            "trial_id": range(30),
            "value": values,
            "seq": range(30),
        }
    )
    assert audit(frame)["pairs"][0]["checks"]["trend"]["verdict"] == "fail"
    lenient = AuditSettings(min_effect={**AuditSettings().min_effect, "trend": 1000.0})
    report = audit(frame, lenient)
    assert report["pairs"][0]["checks"]["trend"]["verdict"] == "note"
    assert report["settings"]["min_effect"]["trend"] == 1000.0


def test_every_check_has_words_for_a_readers_page():
    assert set(CHECK_WORDS) == set(CHECKS)
    assert all(words and words == words.strip() for words in CHECK_WORDS.values())
