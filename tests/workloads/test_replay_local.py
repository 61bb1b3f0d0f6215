"""Trace replay and machine benchmarks end to end on the real local provider."""

import json
import math
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

from runner import clock, lifecycle
from runner.benchmarks import deepswe
from runner.limits import Limits
from runner.readiness import ReadinessPolicy
from runner.traces import replay
from runner.traces.format import Command, load_trace
from tests.runner.faults import FaultyProvider

FAST = Limits(readiness=ReadinessPolicy(deadline_s=5), poll_interval_s=0.1, gone_timeout_s=5)
PRICING = {"per_vcpu_second": 1e-5, "per_gib_second": 3e-6, "billing_increment_s": 1}
UNIT = "six-ensure-bytearray"
# The units that brought the set to ten, replayed once each (about 40 s together here, idle).
ADDED_UNITS = [
    "inflection-camelize-empty",
    "jmespath-to-number-nan",
    "pycparser-static-assert-message",
    "cmarkgfm-c-library-make",
]


def _unit(slug=UNIT):
    return next(u for u in deepswe.units() if u.slug == slug)


def _trial(local, unit, procedure=deepswe.run):
    return lifecycle.run_trial(
        local, deepswe.DEFINITION, unit, procedure, label="test", pricing=PRICING, limits=FAST
    )


def test_it_replays_a_trace_on_local_with_the_expected_digest_stages_and_cost(local):
    result = _trial(local, _unit())
    assert (result.outcome, result.cause) == ("success", "")
    values = {(m.kind, m.name): m.value for m in result.measurements}
    stages = [values[("stage", s)] for s in deepswe.DEFINITION.stage_names]
    assert values[("metric", "tool_time")] == pytest.approx(sum(stages))
    assert values[("stage", "Test")] > 0 and values[("stage", "Write")] > 0
    assert result.cost_usd > 0
    replayed = next(e.data for e in result.evidence if e.kind == "replay")
    assert replayed["digest"] == load_trace(deepswe.TRACES_DIR / UNIT / "trace.json").patch_sha256
    assert replayed["proxy_port"] > 0


@pytest.mark.parametrize("slug", ADDED_UNITS)
def test_it_replays_each_added_unit_on_local_with_its_patch_digest(local, slug):
    result = _trial(local, _unit(slug))
    assert result.outcome == "success", result.cause
    replayed = next(e.data for e in result.evidence if e.kind == "replay")
    trace = load_trace(deepswe.TRACES_DIR / slug / "trace.json")
    assert replayed["digest"] == trace.patch_sha256
    assert [c[1] for c in replayed["commands"]] == [c.exit_code for c in trace.commands]


def test_it_ignores_a_clock_step_outside_the_commands_of_a_replay(local, monkeypatch):
    # A step during the untimed parts of the script (proxy start, digest) shows only in the
    # whole-script span; every command's own span is unaffected, so the trial stands.
    real_parse = clock.parse_trailer

    def stepped_script_span(stderr, key):
        clean, timing = real_parse(stderr, key)
        if timing is None:
            return clean, None
        return clean, clock.GuestTiming(timing.wall_ms + 5000.0, timing.uptime_ms)

    monkeypatch.setattr(clock, "parse_trailer", stepped_script_span)
    result = _trial(local, _unit())
    assert (result.outcome, result.cause) == ("success", "")
    assert any(e.kind == "clock_gate" for e in result.evidence)


def test_it_excludes_a_trial_when_a_command_exits_differently(local, monkeypatch):
    trace = load_trace(deepswe.TRACES_DIR / UNIT / "trace.json")
    first = replace(trace.commands[0], exit_code=7)
    changed = replace(trace, commands=(first, *trace.commands[1:]))
    monkeypatch.setattr(deepswe, "unit_trace", lambda ctx: changed)
    result = _trial(local, _unit())
    assert result.outcome == "excluded"
    assert "command 0 exited 0, the trace recorded 7" in result.cause


def _with_a_stuck_command(monkeypatch):
    """The unit with a second command that overruns its limit (shortened to 1 s here)."""
    monkeypatch.setattr(replay, "MIN_LIMIT_S", 1)
    trace = load_trace(deepswe.TRACES_DIR / UNIT / "trace.json")
    stuck = Command("sleep 60 & echo child $!; sleep 60", 0, 0.0)
    changed = replace(trace, commands=(trace.commands[0], stuck, *trace.commands[1:]))
    monkeypatch.setattr(deepswe, "unit_trace", lambda ctx: changed)


def test_a_command_over_its_limit_excludes_the_trial_naming_the_command_and_limit(
    local, monkeypatch
):
    _with_a_stuck_command(monkeypatch)
    result = _trial(local, _unit())
    assert (result.outcome, result.owner) == ("excluded", "trace")
    assert result.cause.startswith("command 1 timed out: its limit of 1 s passed")
    replayed = next(e.data for e in result.evidence if e.kind == "replay")
    assert replayed["timeout"] == {"command": 1, "limit_s": 1, "timeout_status": 124}
    # The first failed step ends the trial: nothing after the stuck command ran or was timed.
    assert [c[1] for c in replayed["commands"]] == [0, replay.TIMEOUT_EXIT]
    assert not [m for m in result.measurements if m.clock == "guest"]
    # The sandbox answered the post-timeout check, and is destroyed and confirmed gone.
    assert result.cleanup_verified and local.list_sandboxes() == []


def test_a_sandbox_that_stops_answering_after_a_timeout_is_a_provider_failure(local, monkeypatch):
    _with_a_stuck_command(monkeypatch)
    result = _trial(FaultyProvider(local, hang_on="/bin/true"), _unit())
    assert (result.outcome, result.owner) == ("provider_failure", "provider")
    assert result.cause.startswith("command 1 timed out: its limit of 1 s passed")
    assert "then the sandbox stopped answering" in result.cause
    assert result.cleanup_verified and local.list_sandboxes() == []


def test_a_command_that_forges_the_replay_records_makes_a_benchmark_error(local, monkeypatch):
    """Times a command writes into the records are never published: the seal breaks."""
    trace = load_trace(deepswe.TRACES_DIR / UNIT / "trace.json")
    forged = "__CMD 0 0 1700000000.0 1700000000.0 1.0 1.0 " + "0" * 64
    forger = Command(f"printf '%s\\n' '{forged}' > {replay.RECORDS}", 0, 0.0)
    changed = replace(trace, commands=(forger, *trace.commands))
    monkeypatch.setattr(deepswe, "unit_trace", lambda ctx: changed)
    result = _trial(local, _unit())
    assert (result.outcome, result.owner) == ("benchmark_error", "benchmark")
    assert "replay records line 1: its seal does not match" in result.cause
    assert not result.measurements


def test_it_excludes_a_trial_whose_final_patch_digest_differs(local, monkeypatch):
    trace = load_trace(deepswe.TRACES_DIR / UNIT / "trace.json")
    changed = replace(trace, patch_sha256="0" * 64)
    monkeypatch.setattr(deepswe, "unit_trace", lambda ctx: changed)
    result = _trial(local, _unit())
    assert result.outcome == "excluded"
    assert "final git patch SHA-256" in result.cause


def test_it_blocks_network_requests_through_the_deny_proxy_with_403(tmp_path):
    port_file = tmp_path / "port"
    proxy = subprocess.Popen(
        [sys.executable, "runner/traces/denyproxy.py", "--port-file", str(port_file)],
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        for _ in range(100):
            if port_file.exists():
                break
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": url}))
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener.open("http://pypi.org/simple/six/", timeout=5)
        assert refused.value.code == 403
    finally:
        proxy.terminate()
        proxy.wait()


def test_it_lists_every_unit_with_its_digest_and_a_ranking_floor_of_90_percent():
    units = deepswe.units()
    assert all(len(u.digest) == 64 for u in units)
    requested = 20 * len(units)
    assert deepswe.DEFINITION.ranking_floor == math.ceil(requested * 9 / 10)
    assert deepswe.DEFINITION.ranking_floor >= requested * 0.9
    # At least the spec's floor: 90 % of 10 units x 20 trials = 180.
    assert len(units) >= 10 and deepswe.DEFINITION.trials_per_unit == 20
    assert deepswe.DEFINITION.ranking_floor >= 180
    assert json.dumps([u.definition for u in units])
