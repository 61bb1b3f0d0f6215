"""The Isolation benchmark end to end on the real local provider: what its bubblewrap sandbox
refuses, and what it shows of its limits and its kernel."""

import pytest

from runner import lifecycle
from runner.benchmarks import isolation
from runner.benchmarks import isolation_probes as probes
from runner.limits import Limits
from runner.outcomes import EvidenceKind
from runner.readiness import ReadinessPolicy

FAST = Limits(readiness=ReadinessPolicy(deadline_s=5), poll_interval_s=0.05, gone_timeout_s=5)


@pytest.fixture(scope="module")
def readings(tmp_path_factory):
    from runner.declarations import get_declaration
    from runner.providers.local import LocalProvider

    root = tmp_path_factory.mktemp("isolation") / "sandboxes"
    provider = LocalProvider(get_declaration("local"), {"root": root})
    result = lifecycle.run_trial(
        provider,
        isolation.DEFINITION,
        isolation.units()[0],
        isolation.run,
        label="test",
        limits=FAST,
    )
    assert (result.outcome, result.cause) == ("success", "")
    return {m.name: m for m in result.measurements}, result.evidence


def test_the_local_sandbox_refuses_every_risky_operation_its_filter_names(readings):
    values, _ = readings
    refused = {name: m.value for name, m in values.items() if name.startswith("refused_")}
    assert refused == {
        "refused_mount": 1.0,
        "refused_unshare_user": 1.0,
        # Beyond Docker's profile: no command may reach another's memory (a replay's sealer).
        "refused_ptrace": 1.0,
        "refused_keyctl": 1.0,
        "refused_bpf": 1.0,
        "refused_module": 1.0,
        "refused_raw_socket": 1.0,
    }


def test_the_local_sandbox_has_no_way_out_and_shares_the_job_hosts_kernel(readings):
    values, _ = readings
    assert values["egress_open"].value == 0.0
    assert values["egress_result"].value == probes.EGRESS_NO_NETWORK
    assert values["kernel_shared"].value == 1.0
    assert values["runtime_container_file"].value == 0.0


def test_the_local_sandbox_stops_an_allocation_at_its_memory_limit(readings):
    values, _ = readings
    assert values["memory_limit_holds"].value == 1.0
    assert values["memory_enforced_mib"].value <= isolation.DEFINITION.memory_mib
    assert values["cpus_visible"].value >= 1
    assert 0 < values["cpus_enforced"].value <= 2 * isolation.DEFINITION.cpus


def test_every_reading_is_stored_with_its_unit_and_the_count_is_the_main_metric(readings):
    values, evidence = readings
    read = {name for name in values if name != isolation.DEFINITION.metric}
    assert values[isolation.DEFINITION.metric].value == len(read)
    assert all(values[name].unit == probes.BY_NAME[name].unit for name in read)
    answers = [e.data for e in evidence if e.kind == EvidenceKind.ISOLATION_PROBE]
    assert [a["probe"] for a in answers] == list(probes.GROUPS)
    missing = {name for a in answers for name in a["missing"]}
    # What the sandbox does not show (its cgroup files) is said, never filled in.
    assert read | missing == set(probes.BY_NAME) and not read & missing
