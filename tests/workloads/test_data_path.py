"""The data path: Output Stream's command output streamed through the exec stream, counted and
checked as it arrives and never gathered, and the file transfers' large unit, on `local` for real
(docker's run is in tests/providers/test_docker_benchmarks.py)."""

import io
import zlib

import pytest
from django.core.management import call_command

from boxbench.models import Outcome, Trial, TrialState
from runner.benchmarks import output_stream
from runner.benchmarks.output_stream import StreamCheck
from runner.declarations import get_declaration
from runner.named_plans import get_plan
from runner.providers.answers import TOO_LARGE, stdout_streamed_to
from runner.providers.base import ProviderError, SandboxSpec
from runner.providers.local import LocalProvider

MIB = 2**20


def bench_run(*argv) -> str:
    out = io.StringIO()
    call_command("bench", "run", "--provider", "local", "--inline", *argv, stdout=out)
    return out.getvalue()


def done_trials() -> list[Trial]:
    return list(Trial.objects.filter(state=TrialState.DONE).order_by("seq"))


@pytest.mark.django_db(transaction=True)
def test_output_stream_runs_on_local_with_the_size_of_the_setting(chain_provider, settings):
    settings.OUTPUT_STREAM_MIB = 4
    bench_run("--benchmark", "output-stream", "--trials", "1")
    trials = done_trials()
    assert [t.unit.slug for t in trials] == ["4mib"]
    for trial in trials:
        assert trial.outcome == Outcome.SUCCESS, trial.cause
        seconds = trial.metrics["stream_ms"] / 1000
        assert trial.metrics["stream_mib_s"] == pytest.approx(4 / seconds, rel=1e-3)


@pytest.mark.django_db(transaction=True)
def test_the_large_transfer_unit_moves_its_bytes_both_ways(chain_provider, settings):
    settings.TRANSFER_LARGE_MIB = 10
    units = ("--unit", "file-upload:10mib", "--unit", "file-download:10mib")
    bench_run("--benchmark", "file-upload,file-download", *units, "--trials", "1")
    trials = done_trials()
    assert sorted(t.benchmark.slug for t in trials) == ["file-download", "file-upload"]
    for trial in trials:
        assert trial.unit.slug == "10mib" and trial.unit.definition["bytes"] == 10 * MIB
        assert trial.outcome == Outcome.SUCCESS, trial.cause


def test_a_streamed_stdout_passes_the_adapters_output_cap_and_is_never_gathered(tmp_path):
    local = LocalProvider(
        get_declaration("local"), {"root": tmp_path / "sandboxes", "max_output_mib": 1}
    )
    sandbox = local.create(SandboxSpec(cpus=2, memory_mib=1024, lifetime_s=120, label="stream"))
    try:
        write = ["/bin/sh", "-c", "head -c 3145728 /dev/zero"]  # 3 MiB, past the 1 MiB cap
        with pytest.raises(ProviderError) as gathered:
            local.exec(sandbox, write, timeout=60)
        assert gathered.value.code == TOO_LARGE
        check = StreamCheck(3 * MIB)
        with stdout_streamed_to(check):
            result = local.exec(sandbox, write, timeout=60)
        assert result.exit_code == 0 and result.stdout == b""  # nothing kept
        assert check.size == 3 * MIB and check.crc == zlib.crc32(bytes(3 * MIB))
        # Outside the block, exec gathers again.
        assert local.exec(sandbox, ["/bin/echo", "hi"], timeout=60).stdout == b"hi\n"
    finally:
        local.destroy(sandbox)


def test_the_stream_check_counts_and_checks_every_chunk_and_refuses_extra_bytes():
    check = StreamCheck(10)
    for chunk in (b"abc", b"defg", b"hij"):
        check(chunk)
    assert (check.size, check.crc) == (10, zlib.crc32(b"abcdefghij"))
    with pytest.raises(ProviderError) as extra:
        check(b"k")
    assert extra.value.code == TOO_LARGE
    assert "passed the 10 bytes it writes" in str(extra.value)


def test_output_stream_needs_a_streaming_exec_and_is_in_the_full_plan_only():
    assert output_stream.DEFINITION.required_capabilities == ("exec", "output_stream")
    assert "output_stream" not in get_declaration("daytona").capabilities
    assert "output_stream" in get_declaration("docker").capabilities
    default, full = get_plan("default"), get_plan("full")
    assert "output-stream" not in default.benchmarks and "output-stream" in full.benchmarks
    assert default.units["file-upload"] == default.units["file-download"] == ["8mib"]
