"""The isolation probes' answers read as numbers (runner/benchmarks/isolation_probes.py): pure,
no sandbox and no Django. A malformed answer is a ProbeError naming the probe, never a crash."""

import errno

import pytest

from runner.benchmarks import isolation
from runner.benchmarks import isolation_probes as probes


def resources(**fields):
    base = {
        "cpu_count": 64,
        "affinity": 2,
        "mem_total_kib": 4 * 1024 * 1024,
        "cpu_max": None,
        "cfs_quota_us": None,
        "cfs_period_us": None,
        "memory_max": None,
        "memory_limit_in_bytes": None,
    }
    return probes.read_resources({**base, **fields})


def test_it_reads_visible_cpus_and_memory_and_the_cgroup_v2_limits():
    answer = resources(cpu_max="200000 100000", memory_max=str(4096 << 20))
    assert answer.readings == {
        "cpus_visible": 64.0,
        "cpus_affinity": 2.0,
        "memory_visible_mib": 4096.0,
        "cpus_quota": 2.0,
        "memory_limit_mib": 4096.0,
    }
    assert answer.missing == {}


def test_it_reads_cgroup_v1_limits_and_says_why_a_limit_is_missing():
    answer = resources(
        cfs_quota_us="150000", cfs_period_us="100000", memory_limit_in_bytes="9223372036854771712"
    )
    assert answer.readings["cpus_quota"] == 1.5
    assert "memory_limit_mib" not in answer.readings
    assert answer.missing["memory_limit_mib"] == "memory.limit_in_bytes sets no limit"
    unlimited = resources(cpu_max="max 100000", memory_max="max")
    assert unlimited.missing == {
        "cpus_quota": "cpu.max sets no quota (max)",
        "memory_limit_mib": "memory.max sets no limit (max)",
    }
    hidden = resources()
    assert hidden.missing["cpus_quota"] == "no cgroup CPU file is visible inside the sandbox"


@pytest.mark.parametrize(
    "stdout, words",
    [
        (b"not json", "probe resources: not one JSON object"),
        (b"[1, 2]", "answered list, not an object"),
        (b"\xff\xfe", "not one JSON object"),
        (b" " * (probes.SCRIPT_LIMIT + 1), "over 65536"),
    ],
)
def test_an_answer_that_is_not_one_json_object_is_a_named_probe_error(stdout, words):
    with pytest.raises(probes.ProbeError, match=words):
        probes.decode("resources", stdout)


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"affinity": True}, "affinity is True, not int or float"),
        ({"affinity": "2"}, "affinity is '2'"),
        ({"affinity": -1}, "outside 0"),
        ({"cpu_max": "lots"}, "not 'quota period'"),
        ({"cpu_max": "x 100000"}, "not a whole number"),
        ({"cpu_max": "0 100000"}, "CPU quota 0 over period"),
        ({"memory_max": "-5"}, "memory limit -5"),
        ({"memory_max": 5}, "memory_max is 5, not str"),
    ],
)
def test_a_mistyped_or_impossible_field_is_a_named_probe_error(fields, words):
    with pytest.raises(probes.ProbeError, match=words):
        resources(**fields)


def test_a_non_finite_number_is_refused():
    with pytest.raises(probes.ProbeError, match="not a finite number"):
        probes.read_cpu_burn({"workers": 4, "cpu_seconds": float("nan"), "wall_seconds": 2.0}, 2)


def test_the_cpu_burn_gives_cpu_seconds_per_wall_second():
    answer = probes.read_cpu_burn({"workers": 4, "cpu_seconds": 4.1, "wall_seconds": 2.05}, 2)
    assert answer.readings == {"cpus_enforced": pytest.approx(2.0)}
    with pytest.raises(probes.ProbeError, match="ran 8 workers, not 4"):
        probes.read_cpu_burn({"workers": 8, "cpu_seconds": 4, "wall_seconds": 2.0}, 2)
    with pytest.raises(probes.ProbeError, match="under its 2 s"):
        probes.read_cpu_burn({"workers": 4, "cpu_seconds": 1, "wall_seconds": 0.5}, 2)


def test_an_allocation_stopped_before_125_percent_shows_the_memory_limit_holds():
    killed = probes.read_memory(
        {"target_mib": 5120, "allocated_mib": 4032, "end": "signal 9"}, 4096
    )
    assert killed.readings == {"memory_enforced_mib": 4032.0, "memory_limit_holds": 1.0}
    refused = probes.read_memory({"target_mib": 5120, "allocated_mib": 3968, "end": "exit 3"}, 4096)
    assert refused.readings["memory_limit_holds"] == 1.0


def test_an_allocation_that_got_everything_shows_the_limit_does_not_hold():
    answer = probes.read_memory({"target_mib": 5120, "allocated_mib": 5120, "end": "exit 0"}, 4096)
    assert answer.readings == {"memory_enforced_mib": 5120.0, "memory_limit_holds": 0.0}


def test_an_allocation_that_timed_out_records_nothing_and_says_why():
    answer = probes.read_memory({"target_mib": 5120, "allocated_mib": 640, "end": "timeout"}, 4096)
    assert answer.readings == {}
    why = answer.missing["memory_limit_holds"]
    assert f"still running after {probes.ALLOCATION_LIMIT_S} s" in why


def test_the_allocation_bound_lies_inside_the_execs_own_limit():
    # The probe must report a timeout itself, never be cut off by the exec without an answer.
    assert isolation.LIMITS_S["memory"] >= probes.ALLOCATION_LIMIT_S + 10


@pytest.mark.parametrize(
    "data, words",
    [
        ({"target_mib": 5120, "allocated_mib": 6000, "end": "exit 0"}, "outside 0 to 5120"),
        ({"target_mib": 5120, "allocated_mib": 64, "end": "exit 0"}, "exited 0 after 64"),
        ({"target_mib": 5120, "allocated_mib": 64, "end": "rm -rf"}, "ended 'rm -rf'"),
        ({"target_mib": 1024, "allocated_mib": 64, "end": "exit 3"}, "under 125 %"),
    ],
)
def test_an_impossible_allocation_answer_is_a_named_probe_error(data, words):
    with pytest.raises(probes.ProbeError, match=words):
        probes.read_memory(data, 4096)


def test_the_kernel_is_shared_when_the_boot_ids_match():
    assert probes.read_kernel({"boot_id": "abc"}, "abc").readings == {"kernel_shared": 1.0}
    assert probes.read_kernel({"boot_id": "abc"}, "def").readings == {"kernel_shared": 0.0}
    assert "job host" in probes.read_kernel({"boot_id": "abc"}, "").missing["kernel_shared"]


def test_it_reads_the_hypervisor_and_runtime_flags():
    answer = probes.read_virt(
        {
            "cpuinfo_flags": True,
            "sys_hypervisor_type": "xen",
            "dockerenv": False,
            "containerenv": True,
            "cgroup": "0::/machine.slice/libpod-1234.scope",
        }
    )
    assert answer.readings == {
        "virt_hypervisor_flag": 1.0,
        "virt_sys_hypervisor": 1.0,
        "runtime_container_file": 1.0,
        "runtime_cgroup_named": 1.0,
    }
    bare = probes.read_virt(
        {"cpuinfo_flags": None, "dockerenv": False, "containerenv": False, "cgroup": "0::/"}
    )
    assert bare.readings == {
        "virt_sys_hypervisor": 0.0,
        "runtime_container_file": 0.0,
        "runtime_cgroup_named": 0.0,
    }
    assert "no flags line" in bare.missing["virt_hypervisor_flag"]


@pytest.mark.parametrize(
    "interfaces, route, result, code, opened",
    [
        (["lo", "eth0"], True, "connected", probes.EGRESS_CONNECTED, 1.0),
        (["lo"], False, "ENETUNREACH", probes.EGRESS_NO_NETWORK, 0.0),
        (["lo", "eth0"], False, "ENETUNREACH", probes.EGRESS_NO_NETWORK, 0.0),
        (["lo", "eth0"], True, "EPERM", probes.EGRESS_POLICY, 0.0),
        (["lo", "eth0"], True, "timeout", probes.EGRESS_NO_ANSWER, None),
        (["lo", "eth0"], None, "timeout", probes.EGRESS_NO_ANSWER, None),
        (["lo", "eth0"], True, "ENETUNREACH", probes.EGRESS_UNREACHABLE, None),
        (["lo", "eth0"], True, "ECONNREFUSED", probes.EGRESS_REFUSED, None),
        (["lo", "eth0"], True, "EIO", probes.EGRESS_OTHER, None),
    ],
)
def test_egress_tells_a_block_by_the_sandbox_from_no_answer(
    interfaces, route, result, code, opened
):
    answer = probes.read_egress(
        {"interfaces": interfaces, "default_route": route, "result": result}
    )
    assert answer.readings.get("egress_result") == code
    assert answer.readings.get("egress_open") == opened
    if opened is None:
        assert answer.missing["egress_open"].startswith("cannot tell: ")


def test_egress_refuses_interfaces_that_are_not_names():
    with pytest.raises(probes.ProbeError, match="not a list of names"):
        probes.read_egress({"interfaces": [1], "default_route": True, "result": "timeout"})


def operations(**answers):
    return {**dict.fromkeys(probes.OPERATIONS, errno.EPERM), **answers}


def test_each_risky_operation_reads_refused_or_allowed():
    answer = probes.read_operations(
        operations(
            unshare_user=errno.ENOSPC, ptrace=0, module=errno.ENOEXEC, raw_socket=errno.EAFNOSUPPORT
        )
    )
    assert answer.readings == {
        "refused_mount": 1.0,
        "refused_unshare_user": 1.0,
        "refused_ptrace": 0.0,
        "refused_keyctl": 1.0,
        "refused_bpf": 1.0,
        "refused_module": 0.0,
        "refused_raw_socket": 1.0,
    }


def test_an_operation_that_could_not_tell_records_nothing_and_says_why():
    answer = probes.read_operations(
        operations(ptrace=errno.ESRCH, bpf="timeout", keyctl=255, mount=errno.ENOEXEC)
    )
    assert answer.missing == {
        "refused_ptrace": "answered ESRCH: neither a refusal nor a success",
        "refused_bpf": "the operation could not run: timeout",
        "refused_keyctl": "the probe's own code failed in the sandbox",
        "refused_mount": "answered ENOEXEC: neither a refusal nor a success",
    }
    assert set(answer.readings) == {"refused_unshare_user", "refused_module", "refused_raw_socket"}


@pytest.mark.parametrize(
    "data, words",
    [
        (operations(reboot=0), "unknown operations"),
        (operations(mount=300), "mount answered 300"),
        (operations(mount=None), "mount is None"),
        ({"mount": 1}, "unshare_user is None"),
    ],
)
def test_a_malformed_operations_answer_is_a_named_probe_error(data, words):
    with pytest.raises(probes.ProbeError, match=words):
        probes.read_operations(data)


def test_every_script_is_python_and_every_reading_is_catalogued_once():
    for group, script in probes.scripts(2, 4096).items():
        compile(script, group, "exec")
    assert set(probes.GROUPS) == set(probes.scripts(2, 4096))
    assert len(probes.BY_NAME) == len(probes.PROBES)
    assert {f"refused_{o}" for o in probes.OPERATIONS} <= set(probes.BY_NAME)


def test_the_methodology_documents_every_reading_and_its_expected_answer():
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "methodology.md").read_text()
    section = text.split("## Isolation probes", 1)[1].split("\n## ", 1)[0]
    rows = {
        line.split("|")[1].strip(" `") for line in section.splitlines() if line.startswith("| `")
    }
    assert rows == set(probes.BY_NAME)


class Answered:
    def __init__(self, exit_code: int, stdout: bytes = b"", stderr: bytes = b""):
        self.exit_code, self.stdout, self.stderr = exit_code, stdout, stderr


class FakeTrial:
    """The part of a trial's context the probes use: every exec answers the same."""

    def __init__(self, answer: Answered):
        from runner.benchmarks import isolation

        self.definition = isolation.DEFINITION
        self.answer = answer
        self.recorded: dict[str, float] = {}
        self.evidence_kept: list[dict] = []

    def exec(self, argv, timeout, stdin=None):
        assert argv[:3] == ["python3", "-I", "-c"] and timeout <= max(isolation.LIMITS_S.values())
        return self.answer

    def record(self, name, value, **_):
        self.recorded[name] = value

    def evidence(self, kind, data):
        self.evidence_kept.append(data)


def test_without_python3_in_the_image_nothing_is_read_and_each_probe_says_why():
    from runner.benchmarks import isolation

    trial = FakeTrial(Answered(127, stderr=b"python3: not found"))
    isolation.run(trial)
    assert trial.recorded == {"probes_answered": 0}
    why = {name: text for data in trial.evidence_kept for name, text in data["missing"].items()}
    assert why == dict.fromkeys(probes.BY_NAME, "python3 is not in the sandbox's image")


def test_a_malformed_answer_ends_the_trial_as_a_benchmark_error_naming_the_probe():
    from runner.benchmarks import isolation
    from runner.benchmarks.base import BenchmarkError

    trial = FakeTrial(Answered(0, stdout=b"<html>gateway</html>"))
    with pytest.raises(BenchmarkError, match="probe resources: not one JSON object"):
        isolation.run(trial)
    assert trial.evidence_kept[0]["error"].startswith("probe resources")


def test_private_evidence_withholds_the_boot_id_and_the_cgroup_text():
    kernel = b'{"boot_id": "8c1f2a7e-host-boot", "release": "6.1.0"}'
    kept = isolation.private_answer("kernel", kernel)
    assert "8c1f2a7e" not in kept and '"release": "6.1.0"' in kept
    virt = b'{"cgroup": "0::/kubepods/burstable/pod-ab12/node-7", "proc_version": "Linux (b@h1)"}'
    kept = isolation.private_answer("virt", virt)
    assert "pod-ab12" not in kept and "b@h1" not in kept
    assert "(withheld; names kubepods)" in kept
    assert isolation.private_answer("kernel", b"boot 8c1f2a7e") == (
        "(withheld: 13 bytes that are not one JSON object)"
    )
    assert isolation.private_answer("egress", b'{"interfaces": ["lo"]}') == (
        '{"interfaces": ["lo"]}'
    )


def test_a_malformed_kernel_answer_ends_the_trial_without_quoting_the_boot_id():
    from runner.benchmarks.base import BenchmarkError

    trial = FakeTrial(Answered(0, stdout=b'{"boot_id": 8c1f2a7e}'))
    with pytest.raises(BenchmarkError) as raised:
        isolation._probe(trial, "kernel", "", lambda data: probes.read_kernel(data, "x"))
    assert "8c1f2a7e" not in str(raised.value) + str(trial.evidence_kept)
    assert str(raised.value) == "probe kernel: its answer does not read"
