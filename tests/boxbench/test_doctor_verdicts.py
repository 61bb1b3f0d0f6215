"""`bench doctor` reads right on a first run: an optional provider nobody configured is SKIP with
what would enable it (never PASS, never a failure), a provider that was named and is broken is
FAIL, and `./boxbench.sh run` prepares the standard image before the doctor looks for it."""

import contextlib
import io
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runner.providers import docker as docker_adapter

ROOT = Path(__file__).resolve().parents[2]
UNSET = ("DOCKER_HOST", "BOXBENCH_REMOTE_DOCKER_HOST", "E2B_API_KEY", "E2B_API_KEY_FILE")


@pytest.fixture
def bare_machine(monkeypatch, settings, tmp_path):
    """No engine socket, none recorded, no cloud credentials."""
    for name in UNSET:
        monkeypatch.delenv(name, raising=False)
    settings.VAR_DIR = tmp_path
    monkeypatch.setattr(docker_adapter, "LOCAL_SOCKETS", (str(tmp_path / "no-docker.sock"),))
    return monkeypatch


def doctor_lines(*providers: str) -> dict[str, str]:
    """Each provider check's line, by its `slug:check` name; the machine's own checks (disk,
    queue) may fail here, which is not what these tests look at."""
    out = io.StringIO()
    arguments = [argument for slug in providers for argument in ("--provider", slug)]
    with contextlib.suppress(CommandError):
        call_command("bench", "doctor", *arguments, stdout=out)
    lines = {}
    for line in out.getvalue().splitlines():
        verdict, section, name, detail = re.split(r"\s+", line, maxsplit=3)
        if section == "provider":
            lines[name] = f"{verdict} {detail}"
    return lines


@pytest.mark.django_db
def test_providers_nobody_configured_are_skipped_with_what_would_enable_them(bare_machine):
    lines = doctor_lines("docker", "remote-docker", "e2b")
    engine = lines["docker:engine"]
    assert engine.startswith("SKIP ") and "set DOCKER_HOST" in engine
    assert lines["remote-docker:engine"] == (
        "SKIP not configured (set BOXBENCH_REMOTE_DOCKER_HOST)"
    )
    assert lines["e2b:credentials"] == "SKIP not configured: set E2B_API_KEY or E2B_API_KEY_FILE"


@pytest.mark.django_db
def test_skipped_providers_fail_nothing(bare_machine, settings):
    out = io.StringIO()
    try:
        call_command("bench", "doctor", "--provider", "e2b", "--provider", "docker", stdout=out)
    except CommandError as failed:
        # Only the machine's own checks may fail: as many as there are FAIL lines.
        fails = out.getvalue().count("\nFAIL ") + out.getvalue().startswith("FAIL ")
        assert str(failed) == f"{fails} check(s) failed"
        assert "FAIL provider" not in out.getvalue()


@pytest.mark.django_db
def test_a_named_engine_that_does_not_answer_still_fails(bare_machine, tmp_path):
    bare_machine.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    assert doctor_lines("docker")["docker:engine"].startswith("FAIL ")
    bare_machine.setenv("BOXBENCH_REMOTE_DOCKER_HOST", "ftp://builder@example.org")
    line = doctor_lines("remote-docker")["remote-docker:engine"]
    assert line.startswith("FAIL ") and "use ssh://user@host" in line


def test_run_prepares_the_standard_image_before_the_doctor_runs():
    script = (ROOT / "boxbench.sh").read_text()
    body = script[script.index("cmd_run() {") :]
    body = body[: body.index("\n}\n")]
    assert body.count("manage.py bench doctor") == 1
    assert body.index("manage.py bench image prepare") < body.index("manage.py bench doctor")
