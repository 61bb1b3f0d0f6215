"""Every Machine Performance benchmark end to end on the real local provider, shortened.

The runs are shortened (1 s tools, small files) so the folder stays fast; the full parameters are
what runner/benchmarks/machine_*.py declare and what docs/machine.md lists.
"""

import pytest

from runner import lifecycle
from runner.benchmarks import (
    machine_common,
    machine_cpu,
    machine_disk_rand,
    machine_disk_seq,
    machine_hard_links,
    machine_memory_bandwidth,
)
from runner.limits import Limits
from runner.readiness import ReadinessPolicy

FAST = Limits(readiness=ReadinessPolicy(deadline_s=5), poll_interval_s=0.05, gone_timeout_s=5)
# benchmark -> (constants shortened for the test, measurements it must record)
SHORTENED = {
    machine_cpu.SINGLE: ({"SECONDS": 1}, {"cpu_events_per_s", "flag_throttled"}),
    machine_cpu.ALL: ({"SECONDS": 1}, {"cpu_events_per_s", "flag_throttled"}),
    machine_memory_bandwidth: ({"SECONDS": 1}, {"memory_mib_s", "flag_throughput_ceiling"}),
    machine_disk_seq: (
        {"SIZE_MIB": 16, "CAP_SECONDS": 2},
        {"disk_seq_write_mib_s", "disk_seq_read_mib_s", *machine_common.FLAGS[:3]},
    ),
    machine_disk_rand.READ: (
        {"SIZE_MIB": 16, "SECONDS": 1},
        {"rand_read_iops", "rand_read_clat_us", *machine_common.FLAGS[:3]},
    ),
    machine_disk_rand.WRITE: (
        {"SIZE_MIB": 16, "SECONDS": 1},
        {"rand_write_iops", "rand_write_clat_us", "flag_throughput_ceiling", "flag_cpu_bound"},
    ),
    machine_hard_links: ({"LINKS": 2000}, {"hard_links_ms"}),
}


@pytest.mark.parametrize("module", SHORTENED, ids=lambda module: module.DEFINITION.slug)
def test_it_runs_the_machine_benchmark_on_local_on_the_guest_clock(local, module, monkeypatch):
    shortened, expected = SHORTENED[module]
    for name, value in shortened.items():
        monkeypatch.setattr(module, name, value)
    definition = module.DEFINITION
    result = lifecycle.run_trial(
        local, definition, module.units()[0], module.run, label="test", limits=FAST
    )
    assert (result.outcome, result.cause) == ("success", "")
    values = {m.name: m for m in result.measurements}
    assert set(values) == expected
    assert values[definition.metric].value > 0
    assert all(m.clock == "guest" for m in result.measurements)
    flags = [m for m in result.measurements if m.name.startswith("flag_")]
    assert all(m.unit == "flag" and m.value in (0.0, 1.0) for m in flags)
    assert not any(e.kind == "clock_gate" for e in result.evidence)


def test_it_declares_every_parameter_of_a_machine_benchmark_in_its_unit():
    assert machine_cpu.SINGLE.units()[0].definition["seconds"] == machine_cpu.SINGLE.SECONDS
    seq = machine_disk_seq.units()[0].definition
    assert (seq["size_mib"], seq["cap_seconds"]) == (256, 10)
    assert machine_memory_bandwidth.units()[0].definition["seconds"] == 5
    assert {m.DEFINITION.version for m in SHORTENED if m is not machine_hard_links} == {"2"}
