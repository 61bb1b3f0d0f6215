"""Replaying or recording a unit on the host itself (its commands unsandboxed, with the
operator's rights) needs an explicit flag, and warns even then."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from boxbench.cli import trace as trace_cli
from runner.pipelines import record as pipeline_record

UNIT = "six-ensure-bytearray"


def test_a_replay_on_the_host_without_its_flag_is_refused_before_anything_runs(monkeypatch):
    opened = []
    monkeypatch.setattr(trace_cli, "open_runner", lambda where: opened.append(where))
    with pytest.raises(CommandError, match="outside any sandbox.*--unsafe-on-host"):
        call_command("bench", "trace", "replay", UNIT, "--on", "host")
    assert opened == []


def test_a_replay_on_the_host_with_its_flag_runs_and_warns(capsys):
    out = StringIO()
    call_command("bench", "trace", "replay", UNIT, "--on", "host", "--unsafe-on-host", stdout=out)
    assert f"{UNIT} on host: tool time" in out.getvalue()
    assert "warning: --on host: the unit's commands run unsandboxed" in capsys.readouterr().err


def test_recording_a_pipeline_needs_the_flag(monkeypatch, capsys):
    recorded = []
    monkeypatch.setattr(pipeline_record, "record", lambda folder: recorded.append(folder))
    assert pipeline_record.main(["runner/pipelines/six-ci"]) == 2
    assert recorded == [] and "--unsafe-on-host says you mean it" in capsys.readouterr().err
