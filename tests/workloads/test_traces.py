"""Trace units: the shipped set, strict validation, session readers, replay records and verdicts."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from runner.traces import replay
from runner.traces.classify import STAGES, classify
from runner.traces.format import STRATA, TraceError, dump_trace, load_all, load_trace, parse_trace
from runner.traces.record import SessionError, read_session

SIX = Path(__file__).resolve().parents[2] / "runner/traces/six-ensure-bytearray/trace.json"


@pytest.fixture
def raw():
    return json.loads(SIX.read_text())


def test_it_ships_at_least_ten_units_of_25_to_120_commands_with_three_per_stratum():
    traces = load_all()
    assert len(traces) >= 10
    assert all(25 <= len(t.commands) <= 120 for t in traces)
    assert {t.stratum for t in traces} == set(STRATA)
    assert all(sum(t.stratum == s for t in traces) >= 3 for s in STRATA)
    # The default plan needs at least two short units.
    assert sum(t.recorded_ms < 10_000 for t in traces) >= 2


def _recorded_stages(trace):
    """Recorded milliseconds and command counts per stage, as the classifier labels them."""
    ms, count = dict.fromkeys(STAGES, 0.0), dict.fromkeys(STAGES, 0)
    for command in trace.commands:
        stage = classify(command.command)
        ms[stage] += command.duration_ms
        count[stage] += 1
    return ms, count


@pytest.mark.parametrize("trace", load_all(), ids=lambda t: t.slug)
def test_it_labels_each_unit_with_the_stage_mix_of_its_stratum(trace):
    ms, count = _recorded_stages(trace)
    if trace.stratum == "compile":
        assert max(ms, key=ms.get) == "Build"
    elif trace.stratum == "test-suite":
        assert max(ms, key=ms.get) == "Test"
    else:  # edit-loop: many quick reads and edits between short checks
        assert count["Read"] + count["Write"] >= len(trace.commands) / 2
        assert count["Write"] >= 3 and trace.recorded_ms < 10_000
    # Every unit edits the repository and checks its work, as an agent does.
    assert count["Write"] >= 1 and count["Test"] >= 1


def test_it_keeps_every_archive_small_and_pinned_by_its_sha256():
    for trace in load_all():
        assert trace.archive_path.stat().st_size < 2 * 1024 * 1024
        assert trace.repository.source.startswith("https://pypi.org/project/")


def test_it_refuses_a_wrong_exit_code_naming_file_index_and_field(raw, tmp_path):
    raw["commands"][3]["exit_code"] = "0"
    with pytest.raises(TraceError, match=r"trace\.json: commands\[3\]\.exit_code: must be"):
        parse_trace(raw, tmp_path / "six-ensure-bytearray" / "trace.json")


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda r: r.update(schema_version=2), r"schema_version: must be 1"),
        (lambda r: r["commands"][0].pop("command"), r"commands\[0\]\.command"),
        (lambda r: r["commands"][5].update(duration_ms=-1), r"commands\[5\]\.duration_ms"),
        (lambda r: r["commands"][2].update(extra=1), r"commands\[2\]\.extra: unknown field"),
        (lambda r: r.update(patch_sha256="abc"), r"patch_sha256: must be 64"),
        (lambda r: r["repository"].update(sha256="x"), r"repository\.sha256"),
        (lambda r: r.update(stratum="misc"), r"stratum: must be one of"),
        (lambda r: r.update(commands=[]), r"commands: must be a list"),
        (lambda r: r.update(slug="other-name"), r"slug: 'other-name' must match"),
    ],
)
def test_it_refuses_malformed_traces_with_the_field_named(raw, change, message):
    change(raw)
    with pytest.raises(TraceError, match=message):
        parse_trace(raw, SIX)


def test_it_refuses_an_archive_whose_sha256_differs(raw, tmp_path):
    folder = tmp_path / "six-ensure-bytearray"
    folder.mkdir()
    (folder / raw["repository"]["archive"]).write_bytes(b"not the release")
    (folder / "trace.json").write_text(json.dumps(raw))
    with pytest.raises(TraceError, match="repository.sha256: .* has SHA-256"):
        load_trace(folder / "trace.json")


def test_it_refuses_invalid_json_naming_the_file(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text("{ nope")
    with pytest.raises(TraceError, match=f"{path}: not valid JSON"):
        load_trace(path)


def test_it_writes_trace_json_that_loads_back_unchanged(raw, tmp_path):
    folder = tmp_path / "six-ensure-bytearray"
    folder.mkdir()
    shutil.copy(SIX.parent / raw["repository"]["archive"], folder)
    (folder / "trace.json").write_text(dump_trace(raw))
    assert load_trace(folder / "trace.json").digest() == load_trace(SIX).digest()


def test_it_quotes_any_command_for_bash_unchanged():
    import subprocess

    command = "cat > f <<'EOF'\nit's \"quoted\" \\ $HOME `x`\t\x01\nEOF"
    printed = subprocess.run(
        ["bash", "-c", f"printf %s {replay.bash_quote(command)}"], capture_output=True, check=True
    ).stdout.decode()
    assert printed == command


def test_it_gives_each_command_at_least_three_minutes_or_three_times_its_recording():
    assert replay.command_limit_s(1_000) == 180
    assert replay.command_limit_s(100_000) == 300


# -- records and verdicts ---------------------------------------------------------------------


KEY = "k" * 64


def _lines(codes, tail):
    lines = ["__PROXY 40000"]
    for i, code in enumerate(codes):
        lines.append(f"__CMD {i} {code} 1700000000.{i:06d} 1700000000.{i + 20:06d} 10.00 10.00")
    return lines + tail


def _records(trace, codes, tail):
    return replay.seal_lines(KEY, _lines(codes, tail))


def parse(text):
    return replay.parse_records(text, KEY)


def test_it_judges_a_clean_replay_a_success_with_every_stage_summed():
    trace = load_trace(SIX)
    codes = [c.exit_code for c in trace.commands]
    text = _records(trace, codes, [f"__DIGEST {trace.patch_sha256}", "__DONE"])
    verdict = replay.judge(trace, parse(text))
    assert verdict.outcome == "success"
    assert set(verdict.stage_ms) == set(STAGES)
    assert verdict.tool_time_ms == pytest.approx(0.020 * len(codes))
    assert sum(verdict.stage_ms.values()) == pytest.approx(verdict.tool_time_ms)


def test_it_excludes_a_trial_whose_command_exits_differently():
    trace = load_trace(SIX)
    text = _records(trace, [0, 0, 2], ["__MISMATCH 2 2 0"])
    verdict = replay.judge(trace, parse(text))
    assert verdict.outcome == "excluded"
    assert "command 2 exited 2, the trace recorded 0" in verdict.cause


def test_it_excludes_a_timed_out_command_naming_it_and_its_limit_and_asks_for_a_check():
    trace = load_trace(SIX)
    lines = ["__CMD 0 124 1700000000.0 1700000185.5 10.00 195.50", "__TIMEOUT 0 180 137"]
    records = parse(replay.seal_lines(KEY, lines))
    assert records.timeout == replay.CommandTimeout(index=0, limit_s=180, status=137)
    verdict = replay.judge(trace, records)
    assert (verdict.outcome, verdict.timed_out) == ("excluded", True)
    assert verdict.cause.startswith("command 0 timed out: its limit of 180 s passed")
    assert "KILL 5 s after TERM, exit 124" in verdict.cause


def test_a_command_that_exits_124_by_itself_is_an_exit_mismatch_not_a_timeout():
    trace = load_trace(SIX)
    text = replay.seal_lines(KEY, _lines([124], ["__MISMATCH 0 124 0"]))
    verdict = replay.judge(trace, parse(text))
    assert (verdict.outcome, verdict.timed_out) == ("excluded", False)
    assert "command 0 exited 124, the trace recorded 0" in verdict.cause


@pytest.mark.parametrize("record", ["__TIMEOUT 0 180 1", "__TIMEOUT 0 0 124", "__TIMEOUT 0 x 124"])
def test_a_timeout_record_that_is_not_a_timeouts_makes_a_parse_error(record):
    with pytest.raises(ValueError, match="replay records line 2: cannot parse"):
        parse(replay.seal_lines(KEY, ["__CMD 0 124 1.0 2.0 1.00 2.00", record]))


def test_it_excludes_a_mismatched_patch_digest():
    trace = load_trace(SIX)
    codes = [c.exit_code for c in trace.commands]
    text = _records(trace, codes, ["__DIGEST " + "f" * 64, "__MISMATCH digest"])
    verdict = replay.judge(trace, parse(text))
    assert verdict.outcome == "excluded"
    assert "patch SHA-256" in verdict.cause


def test_it_blames_the_provider_when_the_script_ends_early_without_a_mismatch_record():
    trace = load_trace(SIX)
    verdict = replay.judge(trace, parse(_records(trace, [0, 0], [])))
    assert verdict.outcome == "provider_failure"
    assert "after 2 of 32 commands" in verdict.cause


def test_it_blames_the_provider_for_a_stepped_clock():
    trace = load_trace(SIX)
    codes = [c.exit_code for c in trace.commands]
    lines = _lines(codes, [f"__DIGEST {trace.patch_sha256}", "__DONE"])
    lines[4] = lines[4].replace("__CMD 3 0 1700000000.000003", "__CMD 3 0 1699999999.000003")
    text = replay.seal_lines(KEY, lines)
    verdict = replay.judge(trace, parse(text))
    assert verdict.outcome == "provider_failure"
    assert "stepped clock: command 3" in verdict.cause


# `read` shadowed by a function that hands out the given /proc/uptime readings in turn.
FAKE_UPTIME = """__n=0
__readings=({readings})
read() {{ printf -v "${{@: -1}}" '%s 5.00' "${{__readings[__n]}}"; __n=$((__n + 1)); }}
__bb_clocks; echo "$__bb_u $__n"
"""


@pytest.mark.parametrize(
    ("readings", "kept"),
    [
        ("100.00 100.00", "100.00 2"),  # both reads in one tick: kept at once
        ("100.00 100.12 100.20 100.20", "100.20 4"),  # descheduled between reads: read again
        (" ".join(["1.00", "2.00"] * 5), "1.00 10"),  # five tries, then the last
    ],
)
def test_it_pairs_each_wall_reading_with_an_uptime_read_in_the_same_tick(readings, kept):
    script = replay._RUN_FUNCTION + FAKE_UPTIME.format(readings=readings)
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == kept


def test_it_calls_an_unreadable_record_our_defect():
    with pytest.raises(ValueError, match="replay records line 1: cannot parse"):
        parse(replay.seal_lines(KEY, ["__CMD zero"]))


# -- sessions -----------------------------------------------------------------------------------


def test_it_reads_plain_text_one_command_per_line():
    assert read_session("ls\n\ngit diff\n") == ["ls", "git diff"]


def test_it_reads_a_json_array_of_commands():
    assert read_session('["cat > f <<EOF\\nx\\nEOF", "ls"]') == ["cat > f <<EOF\nx\nEOF", "ls"]


def test_it_reads_the_bash_calls_of_an_anthropic_trajectory():
    messages = [
        {"role": "user", "content": "fix it"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "1", "name": "bash", "input": {"command": "ls"}},
                {
                    "type": "tool_use",
                    "id": "2",
                    "name": "str_replace_based_edit_tool",
                    "input": {"command": "view", "path": "/app/x"},
                },
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "1", "content": "x"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "3", "name": "bash", "input": {"restart": True}},
                {"type": "tool_use", "id": "4", "name": "bash", "input": {"command": "pytest -q"}},
            ],
        },
    ]
    assert read_session(json.dumps({"messages": messages})) == ["ls", "pytest -q"]


def test_it_reads_the_bash_calls_of_an_openai_trajectory():
    messages = [
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                },
                {
                    "type": "function",
                    "function": {"name": "shell", "arguments": '{"cmd": ["git", "diff"]}'},
                },
            ],
        },
        {"type": "function_call", "name": "execute_bash", "arguments": '{"command": "make"}'},
    ]
    assert read_session(json.dumps(messages), "trajectory") == ["ls", "git diff", "make"]


def test_it_refuses_a_session_without_commands():
    with pytest.raises(SessionError, match="s.json: the session holds no shell commands"):
        read_session("[]", "json", source="s.json")
