"""Machine benchmark parsers, pre-test checks and cache flags (pure, with a stand-in context)."""

import json

import pytest

from runner.benchmarks import machine_common as mc
from runner.benchmarks import machine_disk_seq
from runner.benchmarks.base import BenchmarkError, GuestRun, Missed, ProviderFailure
from runner.providers.base import ExecResult

SYSBENCH_CPU = """
[ 1s ] thds: 1 eps: 500.00 lat (ms,95%): 2.00
[ 2s ] thds: 1 eps: 500.00 lat (ms,95%): 2.00
[ 3s ] thds: 1 eps: 500.00 lat (ms,95%): 2.00
[ 4s ] thds: 1 eps: 300.00 lat (ms,95%): 2.00
[ 5s ] thds: 1 eps: 300.00 lat (ms,95%): 2.00
[ 6s ] thds: 1 eps: 300.00 lat (ms,95%): 2.00
CPU speed:
    events per second:   400.00
"""


class StubContext:
    def __init__(self, exit_code=0, stdout=b""):
        self.result = ExecResult(exit_code, stdout, b"")

    def exec(self, argv, timeout, stdin=None):
        return self.result


class BackgroundOnlyContext:
    """Answers background commands only: a tool run sent synchronously fails the test."""

    def __init__(self, exit_code=0, stdout=b"", stderr=b""):
        self.run = GuestRun(exit_code, stdout, stderr, 1.0, 1.0, 1.0, 1.0, True)
        self.background_calls = []
        self.records = {}

    def background(self, script, timeout, workdir=None, *, check_gate=True):
        self.background_calls.append((script, timeout, workdir, check_gate))
        return self.run

    def record(self, name, value, **kwargs):
        self.records[name] = value


def _fio(direction, iops, clat_ns, cpu):
    side = {"iops": iops, "bw_bytes": iops * 4096, "clat_ns": {"mean": clat_ns}}
    return json.dumps({"jobs": [{direction: side, "usr_cpu": cpu / 2, "sys_cpu": cpu / 2}]})


def test_it_reads_sysbench_cpu_and_flags_a_run_that_slows_down():
    eps, intervals = mc.parse_sysbench_cpu(SYSBENCH_CPU)
    assert eps == 400.0 and len(intervals) == 6
    assert mc.throttled(intervals)
    assert not mc.throttled([500.0] * 6)


def test_it_reads_sysbench_memory_bandwidth():
    text = "32768.00 MiB transferred (6582.31 MiB/sec)"
    assert mc.parse_sysbench_memory(text) == 6582.31


def test_it_calls_unparseable_tool_output_our_defect():
    with pytest.raises(BenchmarkError, match="events per second"):
        mc.parse_sysbench_cpu("segfault")
    with pytest.raises(BenchmarkError, match="fio's JSON"):
        mc.parse_fio("fio: bad option", "read")


def test_it_flags_a_direct_read_too_fast_for_any_device_as_cached():
    figures = mc.parse_fio("note: banner\n" + _fio("read", 900_000, 1_100, 40.0), "read")
    flags = mc.disk_flags(figures, "rand_iops", figures["iops"], reads=True)
    assert flags == {
        "flag_throughput_ceiling": False,
        "flag_cpu_bound": False,
        "flag_cached_direct_read": True,
    }


def test_it_flags_a_ceiling_and_a_cpu_bound_run():
    figures = mc.parse_fio(_fio("write", 3_000_000, 300_000, 97.0), "write")
    flags = mc.disk_flags(figures, "rand_iops", figures["iops"], reads=False)
    assert flags == {"flag_throughput_ceiling": True, "flag_cpu_bound": True}


def test_it_misses_a_trial_when_the_working_directory_rejects_o_direct():
    failing = StubContext(1, b"dd: failed to open '/app/.boxbench-odirect': Invalid argument")
    with pytest.raises(Missed, match="rejects O_DIRECT: dd: failed"):
        mc.require_direct_io(failing)


def test_it_misses_a_trial_when_the_working_directory_lacks_free_space():
    df = (
        b"Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/x 100 90 10240 90% /app\n"
    )
    with pytest.raises(Missed, match="has 10 MiB free; this test needs 512 MiB"):
        mc.require_free_space(StubContext(0, df), 512)
    mc.require_free_space(StubContext(0, df), 5)


def test_it_runs_a_cpu_run_in_the_background_in_app_with_the_clock_gate():
    ctx = BackgroundOnlyContext(stdout=SYSBENCH_CPU.encode() + b"nr_throttled_delta 0\n")
    mc.run_cpu(ctx, threads="1", seconds=6)
    [(script, timeout, workdir, check_gate)] = ctx.background_calls
    assert "sysbench cpu --threads=1 --time=6 --cpu-max-prime=20000" in script
    assert (timeout, workdir, check_gate) == (6 + mc.TOOL_MARGIN_S, "/app", True)
    assert ctx.records == {"cpu_events_per_s": 400.0, "flag_throttled": 1.0}


def test_it_lays_out_the_fio_file_in_the_background_without_a_clock_gate():
    ctx = BackgroundOnlyContext()
    mc.layout_file(ctx, 64)
    [(script, _, workdir, check_gate)] = ctx.background_calls
    assert script.startswith("dd if=/dev/urandom of=/app/.boxbench-fio bs=1M count=64")
    assert (workdir, check_gate) == ("/app", False)
    with pytest.raises(ProviderFailure, match="cannot lay out the 64 MiB .*No space left"):
        mc.layout_file(BackgroundOnlyContext(1, stderr=b"dd: No space left on device"), 64)


def test_it_calls_a_tool_missing_from_the_image_our_defect():
    with pytest.raises(BenchmarkError, match="fio: the tool is not installed"):
        mc.run_tool(BackgroundOnlyContext(127), "fio --version", 10, "fio")


def test_it_caps_sequential_jobs_by_time_and_runs_random_jobs_for_their_time():
    sequential = mc.fio_command("w", "write", "1M", 256, 10, time_based=False)
    assert "--runtime=10" in sequential and "--time_based" not in sequential
    assert "--end_fsync=1" in sequential
    random_read = mc.fio_command("r", "randread", "4k", 256, 5)
    assert "--runtime=5 --time_based" in random_read and "--end_fsync" not in random_read


def test_it_splits_the_sequential_write_and_read_reports():
    text = f"{_fio('write', 200, 1, 5.0)}\n{machine_disk_seq.BETWEEN}\n{_fio('read', 300, 1, 5.0)}"
    write_text, read_text = machine_disk_seq.split_reports(text)
    assert mc.parse_fio(write_text, "write")["iops"] == 200
    assert mc.parse_fio(read_text, "read")["iops"] == 300
    with pytest.raises(BenchmarkError, match="not separated"):
        machine_disk_seq.split_reports(_fio("write", 200, 1, 5.0))
