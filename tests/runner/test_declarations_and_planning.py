import math
import random

import pytest

from runner import rules
from runner.benchmarks import all_benchmarks
from runner.declarations import DeclarationError, get_declaration, load_declaration
from runner.pricing import refused_cost, trial_cost_usd

with open(get_declaration("local").path) as _file:
    LOCAL_YAML = _file.read()


def write(tmp_path, text, name="local.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_it_loads_the_local_declaration_with_a_stable_digest(tmp_path):
    original = get_declaration("local")
    reformatted = load_declaration(write(tmp_path, "# a comment\n" + LOCAL_YAML + "\n\n"))
    assert original.provider == "local" and "exec" in original.capabilities
    assert reformatted.digest == original.digest and len(original.digest) == 64


def test_it_reads_whether_a_providers_sandboxes_share_the_job_host(tmp_path):
    assert get_declaration("local").shares_job_host is True
    remote = load_declaration(write(tmp_path, LOCAL_YAML.replace("shares_job_host: true\n", "")))
    assert remote.shares_job_host is False  # the default: sandboxes elsewhere


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("capabilities: [exec,", "capabilities: [teleport, exec,"),
            "unknown capabilities teleport",
        ),
        (("schema_version: 1", "schema_version: 2"), "schema_version must be 1"),
        (("currency: USD", "currency: EUR"), "pricing.currency must be USD"),
        (
            ("provider_sourced: false", "provider_sourced: true"),
            "pricing.provider_sourced is true but per_vcpu_second, per_gib_second, per_sandbox"
            " are all 0",
        ),
        (("{cpus: 1, memory_mib: 2048}", "{cpus: 0, memory_mib: 2048}"), "machine_sizes[0]"),
        (("concurrent_sandboxes: 8", "concurrent_sandboxes: -1"), "limits.concurrent_sandboxes"),
        (("shares_job_host: true", "shares_job_host: yes please"), "shares_job_host must be"),
        (
            ('account_tier: "none: the job host itself", ', ""),
            "limits.account_tier must say which account tier (plan) boxbench tests",
        ),
        (("date: 2026-11-30}", "date: last week}"), "limits.date must be a date (YYYY-MM-DD)"),
        (("api_requests_per_s: null", "api_requests_per_s: 0"), "limits.api_requests_per_s"),
    ],
)
def test_it_names_the_file_and_field_of_a_bad_declaration(tmp_path, change, message):
    path = write(tmp_path, LOCAL_YAML.replace(*change))
    with pytest.raises(DeclarationError) as error:
        load_declaration(path)
    assert str(path) in str(error.value) and message in str(error.value)


def test_each_declaration_names_its_limits_account_tier_source_and_date():
    e2b = get_declaration("e2b")
    assert (e2b.concurrent_sandboxes, e2b.create_rate_per_s) == (20, 1)
    assert e2b.limits["account_tier"] == "Hobby"
    assert e2b.limits["source"] == "https://e2b.dev/docs/sandbox/rate-limits"
    assert e2b.limits["date"] == "2026-11-30"


def test_it_refuses_a_declaration_named_after_another_provider(tmp_path):
    with pytest.raises(DeclarationError, match="must match the file name"):
        load_declaration(write(tmp_path, LOCAL_YAML, name="other.yaml"))


def test_it_refuses_malformed_yaml(tmp_path):
    with pytest.raises(DeclarationError, match="not valid YAML"):
        load_declaration(write(tmp_path, "provider: [unclosed"))


def test_it_refuses_with_stable_codes_before_a_run_starts(tmp_path):
    narrow = LOCAL_YAML.replace(
        "capabilities: [exec, file_transfer, network_lockdown, snapshot, fork, unique_layer, "
        "output_stream]",
        "capabilities: [exec]",
    ).replace("concurrent_sandboxes: 8", "concurrent_sandboxes: 2")
    declaration = load_declaration(write(tmp_path, narrow))
    upload = all_benchmarks()["file-upload"].DEFINITION
    found = rules.refusals(declaration, upload, concurrency=4)
    assert [(r.code, r.label) for r in found] == [
        ("R401", "Not Supported"),
        ("R403", "Account Limit"),
    ]
    assert found[0].missing == "file_transfer"
    big = upload.__class__(**{**upload.__dict__, "cpus": 16, "memory_mib": 65536})
    assert [r.code for r in rules.refusals(declaration, big, 1)][1] == "R402"
    assert rules.refusals(get_declaration("local"), upload, 2) == []


def test_it_spreads_trials_over_four_rounds():
    assert rules.split_rounds(20) == [5, 5, 5, 5]
    assert rules.split_rounds(6) == [2, 2, 1, 1]


def test_it_interleaves_a_shuffled_benchmark_order_reproducibly_from_the_seed():
    names = ["a", "b", "c", "d"]
    order = rules.chain_order(names, random.Random(7))
    assert order == rules.chain_order(names, random.Random(7))
    assert [r for _, r in order] == [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4
    assert [b for b, r in order if r == 1] == [b for b, r in order if r == 4]


def test_it_measures_in_flight_as_a_time_weighted_mean_of_other_trials():
    means = rules.in_flight_means({"a": [(0, 10)], "b": [(5, 10)], "c": [(20, 30)]})
    assert means == {"a": 0.5, "b": 1.0, "c": 0.0}


def test_it_stops_refilling_on_every_condition_of_the_spec():
    state = rules.TopUpState(started_at=0.0, time_limit_s=60, budget_usd=1.0)

    def stop(now=1.0, spent=0.0, **given):
        held = dict(limit_reached=None, units_left=True, unreplaceable=None, cancelled=False)
        return rules.top_up_stop(state, now, spent, **{**held, **given})

    assert stop() is None
    assert stop(limit_reached="the run budget of 1 USD is spent") == (
        "the run budget of 1 USD is spent"
    )
    assert stop(units_left=False) == "every unit reached its target or its 2N attempts"
    assert "cannot be replaced" in stop(unreplaceable="cut short")
    assert "time limit" in stop(now=61.0)
    assert "budget" in stop(spent=1.0)
    assert stop(cancelled=True) == "the run was cancelled"
    state.after_round(0)
    assert stop() is None
    state.after_round(0)
    assert "two refill rounds" in stop()
    # The first condition that holds is the one named.
    assert stop(units_left=False, unreplaceable="cut short") == stop(units_left=False)
    assert "cannot be replaced" in stop(unreplaceable="cut short", cancelled=True)


def test_it_never_lets_a_unit_take_more_than_twice_n_attempts():
    assert rules.top_ups_for_unit(target=5, successes=2, attempts=5) == 3
    assert rules.top_ups_for_unit(target=5, successes=2, attempts=9) == 1
    assert rules.top_ups_for_unit(target=5, successes=5, attempts=6) == 0


def test_it_bills_increments_minimums_and_per_sandbox_fees():
    pricing = {
        "per_vcpu_second": 0.01,
        "per_gib_second": 0.001,
        "per_sandbox": 0.5,
        "billing_increment_s": 1,
        "minimum_s": 60,
    }
    assert trial_cost_usd(pricing, 2, 4096, 10.2) == pytest.approx(60 * (0.02 + 0.004) + 0.5)
    assert trial_cost_usd(pricing, 2, 4096, 61.1) == pytest.approx(62 * 0.024 + 0.5)
    assert trial_cost_usd({}, 2, 4096, 10) is None


@pytest.mark.parametrize(
    ("cost", "why"),
    [
        (1e300, "1e+300 USD, above the largest value stored (1e+12)"),
        (-0.5, "-0.5 USD, a negative cost"),
        (math.inf, "inf USD, not a finite number"),
        (math.nan, "nan USD, not a finite number"),
    ],
)
def test_a_cost_no_price_can_be_is_refused_with_its_reason(cost, why):
    assert refused_cost(cost) == why


def test_a_cost_within_the_stored_range_is_kept():
    assert [refused_cost(c) for c in (0.0, 0.0123, 1e12)] == ["", "", ""]


def test_a_declaration_records_a_known_fault_and_the_planner_holds_the_test_back(tmp_path):
    faulty = LOCAL_YAML + "known_faults:\n  file-upload: uploads over 1 MiB hang (upstream bug)\n"
    declaration = load_declaration(write(tmp_path, faulty))
    assert declaration.known_faults == {"file-upload": "uploads over 1 MiB hang (upstream bug)"}
    upload = all_benchmarks()["file-upload"].DEFINITION
    found = rules.refusals(declaration, upload, concurrency=2)
    assert [(r.code, r.label, r.missing) for r in found] == [
        ("R404", "Not Supported", "uploads over 1 MiB hang (upstream bug)")
    ]
    with pytest.raises(DeclarationError, match="known_faults must map benchmark slugs"):
        load_declaration(write(tmp_path, LOCAL_YAML + "known_faults:\n  file-upload: ''\n"))


@pytest.mark.parametrize("cloud", ["daytona", "e2b", "modal", "vercel"])
def test_ci_actions_asks_the_default_size_every_cloud_provider_offers(cloud):
    # "Each benchmark requests a 2 vCPU / 4 GiB sandbox unless its methodology page specifies
    # another size": no page sets one for CI jobs.
    definition = all_benchmarks()["ci-actions-boxbench"].DEFINITION
    assert (definition.cpus, definition.memory_mib) == (2, 4096)
    refused = rules.refusals(get_declaration(cloud), definition, definition.parallel_trials)
    assert "R402" not in {r.code for r in refused}
