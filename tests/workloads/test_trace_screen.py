"""New trace sessions are screened by DeepSWE's exclusion rules before they become units."""

import pytest

from runner.traces.format import TraceError, load_all
from runner.traces.record import record_trace
from runner.traces.screen import screen_commands, screen_recording

EXCLUDED = [
    ("find / -name conftest.py", "walks / with find"),
    ("x=$(find / -name '*.h')", "walks / with find"),
    ("python -m http.server 8000 &", "runs a background job (&)"),
    ("nohup make -j4 > build.log", "runs a background job (nohup)"),
    ("env CUDA_VISIBLE_DEVICES=0 nvidia-smi", "needs a GPU (nvidia-smi)"),
    ('python -c "import torch; print(torch.cuda.is_available())"', "needs a GPU (CUDA)"),
    ("sudo modprobe kvm", "loads a kernel module (modprobe)"),
    ("sleep 5 && pytest", "sleeps on the wall clock"),
]
KEPT = [
    "find . -name '*.py'",
    "cd / && ls",
    "pytest -q 2>&1 | tail -3",
    "make &> build.log && ./a.out",
    'echo "a & b" > notes.txt',
    "grep -rn 'find /' docs",
]


@pytest.mark.parametrize(("command", "reason"), EXCLUDED)
def test_it_names_why_a_command_is_excluded(command, reason):
    assert screen_commands(["ls", command]) == [f"command 1 ({command}): {reason}"]


@pytest.mark.parametrize("command", KEPT)
def test_it_keeps_commands_no_rule_excludes(command):
    assert screen_commands([command]) == []


def test_every_shipped_unit_passes_the_screen():
    assert [p for t in load_all() for p in screen_commands([c.command for c in t.commands])] == []


def test_a_command_that_timed_out_in_the_recording_excludes_the_session():
    problems = screen_recording([0, 124, 1, 137], ["ls", "timeout 30 pytest", "false", "x"])
    assert problems == [
        "command 1 (timeout 30 pytest): timed out (exit 124)",
        "command 3 (x): timed out (exit 137)",
    ]


def test_recording_refuses_an_excluded_session_before_writing_anything(tmp_path):
    with pytest.raises(TraceError, match=r"excluded by DeepSWE's trace rules.*walks / with find"):
        record_trace(
            ["ls", "find / -name x"],
            tmp_path / "repo.tar.gz",
            slug="walks-root",
            title="t",
            stratum="edit-loop",
            source="s",
            out_root=tmp_path / "traces",
        )
    assert not (tmp_path / "traces").exists()
