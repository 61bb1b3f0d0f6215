"""The Harbor task format, checked directly: what real task folders hold is accepted, what is
unsafe or unusable is refused naming the file and the field."""

import io
import os
import shutil

import pytest
from django.core.management import CommandError, call_command

from runner.tasks import dockerfile, imported
from runner.tasks.format import TASKS_DIR, TaskError, check, load_all, load_task, size_mib

TOML = """\
version = "1.0"
[metadata]
author_name = "someone"
unknown_key = {nested = true}
[verifier]
timeout_sec = 60.0
[agent]
timeout_sec = 120.0
[environment]
build_timeout_sec = 600.0
cpus = 2
memory = "4G"
storage = "10G"
"""


@pytest.fixture
def task(tmp_path):
    """A minimal task folder in Terminal-Bench 2.0's style, to alter."""
    folder = tmp_path / "my-task"
    for name, text in {
        "task.toml": TOML,
        "instruction.md": "Do the thing.\n",
        "environment/Dockerfile": "FROM boxbench-standard\nWORKDIR /app\nCOPY data.txt /app/\n",
        "environment/data.txt": "data\n",
        "solution/solve.sh": "# the oracle\n#!/bin/bash\ncp /app/data.txt /app/out.txt\n",
        "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
    }.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_it_loads_every_shipped_task_on_the_standard_image():
    tasks = load_all(TASKS_DIR)
    assert len(tasks) >= 10
    assert all(t.builds_on_standard for t in tasks)
    assert all(1 <= t.agent_timeout_s <= 600 for t in tasks)


def test_it_accepts_terminal_bench_2_sizes_extra_keys_and_scripts_without_shebang(task):
    loaded = load_task(task)
    assert (loaded.cpus, loaded.memory_mib, loaded.storage_mib) == (2, 4096, 10240)
    assert (loaded.verifier_timeout_s, loaded.agent_timeout_s) == (60.0, 120.0)
    assert loaded.metadata["unknown_key"] == {"nested": True}
    assert not os.access(task / "solution" / "solve.sh", os.X_OK)


def test_it_accepts_the_newer_mb_fields_and_schema_version(task):
    toml = task / "task.toml"
    toml.write_text(
        TOML.replace('version = "1.0"', "schema_version = 2")
        .replace('memory = "4G"', "memory_mb = 3000")
        .replace('storage = "10G"', "storage_mb = 512")
    )
    loaded = load_task(task)
    assert (loaded.memory_mib, loaded.storage_mib) == (3000, 512)


def test_it_reads_sizes_as_harbor_writes_them():
    assert [size_mib(v, "x") for v in ("2G", "512M", "1.5GiB", "1T", 2048, "2g")] == [
        2048,
        512,
        1536,
        1048576,
        2048,
        2048,
    ]
    with pytest.raises(TaskError, match="x: 'lots' is not a size"):
        size_mib("lots", "x")


def test_a_docker_image_beside_the_dockerfile_is_kept(task):
    toml = task / "task.toml"
    toml.write_text(TOML.replace("cpus = 2", 'cpus = 2\ndocker_image = "example/task:2025"'))
    loaded = load_task(task)
    assert loaded.docker_image == "example/task:2025" and loaded.builds_on_standard


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda t: (t / "task.toml").write_text(TOML.replace("cpus = 2", 'cpus = "two"')),
            "task.toml: environment.cpus: Expected `int`, got `str`",
        ),
        (
            lambda t: (t / "task.toml").write_text(TOML.replace("cpus = 2", "cpus = 0")),
            "task.toml: environment.cpus: 0 is outside 1 to 64",
        ),
        (
            lambda t: (t / "task.toml").write_text(TOML.replace('"4G"', '"a lot"')),
            "task.toml: environment.memory: 'a lot' is not a size",
        ),
        (lambda t: (t / "task.toml").write_text("[verifier\n"), "task.toml: not valid TOML"),
        (
            lambda t: (t / "task.toml").write_text(TOML.replace("60.0", "-1.0")),
            "task.toml: verifier.timeout_sec: -1.0 is outside",
        ),
        (
            lambda t: (t / "task.toml").write_text(
                TOML.replace("cpus = 2", 'docker_image = "/home/me/image.tar"')
            ),
            "task.toml: environment.docker_image: '/home/me/image.tar' is not an image reference",
        ),
        (lambda t: (t / "tests" / "test.sh").unlink(), "tests/test.sh: missing"),
        (lambda t: (t / "solution" / "solve.sh").write_text("  \n"), "solution/solve.sh: empty"),
        (lambda t: (t / ".git").mkdir(), ".git: a task holds no .git"),
        (
            lambda t: (t / "environment" / "link").symlink_to("/etc/passwd"),
            "environment/link: a symlink leading out of the task",
        ),
        (
            lambda t: (t / "environment" / "Dockerfile").write_text(
                "FROM boxbench-standard\nCOPY /etc/passwd /app/\n"
            ),
            "Dockerfile: line 2: COPY: source '/etc/passwd' is a host path",
        ),
        (
            lambda t: (t / "environment" / "Dockerfile").write_text(
                "FROM boxbench-standard\nCOPY ../secret /app/\n"
            ),
            "Dockerfile: line 2: COPY: source '../secret' is a host path",
        ),
        (
            lambda t: (t / "environment" / "Dockerfile").write_text("WORKDIR /app\n"),
            "Dockerfile: line 1: WORKDIR: comes before FROM",
        ),
        (
            lambda t: (t / "environment" / "Dockerfile").unlink(),
            "environment/Dockerfile: missing, and task.toml names no environment.docker_image",
        ),
    ],
)
def test_a_malformed_task_is_refused_naming_file_and_field(task, change, message):
    change(task)
    with pytest.raises(TaskError) as refused:
        load_task(task)
    assert message in str(refused.value)
    assert str(task) in str(refused.value)


def test_a_file_above_the_bound_is_refused(task, monkeypatch):
    monkeypatch.setattr("runner.tasks.format.MAX_FILE_BYTES", 10)
    with pytest.raises(TaskError, match=r"data.txt: 5 bytes|instruction.md: 14 bytes, above"):
        load_task(task)


def test_a_dockerfile_on_another_base_needs_an_image_build(task):
    (task / "environment" / "Dockerfile").write_text(
        "FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y tmux\n"
    )
    loaded = load_task(task)
    assert not loaded.builds_on_standard
    assert loaded.environment.why_not == "its base image ubuntu:24.04 is not the standard image"


def test_the_dockerfile_replay_copies_folders_and_follows_workdir(tmp_path):
    folder = tmp_path / "environment"
    (folder / "src" / "lib").mkdir(parents=True)
    (folder / "Dockerfile").write_text(
        "# comment\nFROM boxbench-standard AS base\nWORKDIR /app/proj\n"
        "COPY src/ ./\nENV MODE=fast \\\n    LEVEL=2\nRUN make \\\n  all\n"
    )
    files = {"environment/Dockerfile", "environment/src/a.c", "environment/src/lib/b.c"}
    env = dockerfile.parse(folder, files)
    assert env.on_standard and env.workdir == "/app/proj"
    assert [s.kind for s in env.steps] == ["workdir", "copy", "env", "env", "run"]
    assert env.steps[1].args == (("src/a.c", "/app/proj/a.c"), ("src/lib/b.c", "/app/proj/lib/b.c"))
    assert dockerfile.environment_variables(env) == {"MODE": "fast", "LEVEL": "2"}
    assert env.steps[-1].args == ("make  all",)


def test_check_reports_every_bad_task_of_a_folder_and_keeps_the_good(task, tmp_path):
    bad = tmp_path / "bad-task"
    shutil.copytree(task, bad)
    (bad / "instruction.md").unlink()
    tasks, problems = check(tmp_path)
    assert [t.slug for t in tasks] == ["my-task"]
    assert len(problems) == 1 and "bad-task/instruction.md: missing" in problems[0]


def test_an_import_with_a_bad_task_writes_nothing(task, tmp_path, monkeypatch):
    monkeypatch.setenv("BOXBENCH_IMPORTED_TASKS_DIR", str(tmp_path / "imported"))
    bad = tmp_path / "bad-task"
    shutil.copytree(task, bad)
    (bad / "task.toml").write_text(TOML.replace("cpus = 2", "cpus = -1"))
    with pytest.raises(TaskError, match="bad-task/task.toml: environment.cpus"):
        imported.import_tasks(tmp_path)
    assert not (tmp_path / "imported").exists() or not any((tmp_path / "imported").iterdir())
    shutil.rmtree(bad)
    assert [t.slug for t in imported.import_tasks(tmp_path)] == ["my-task"]
    assert [p.name for p in (tmp_path / "imported").iterdir()] == ["my-task"]


def test_an_import_may_not_shadow_a_shipped_task(task, tmp_path, monkeypatch):
    monkeypatch.setenv("BOXBENCH_IMPORTED_TASKS_DIR", str(tmp_path / "imported"))
    shutil.copytree(task, tmp_path / "src" / "kv-http-server")
    with pytest.raises(TaskError, match="one of boxbench's own tasks"):
        imported.import_tasks(tmp_path / "src")


def test_bench_tasks_check_lists_the_good_and_fails_naming_the_bad(task, tmp_path):
    bad = tmp_path / "bad-task"
    shutil.copytree(task, bad)
    (bad / "task.toml").write_text(TOML.replace("timeout_sec = 60.0", 'timeout_sec = "soon"'))
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 of 2 task"):
        call_command("bench", "tasks", "check", str(tmp_path), stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("ok   my-task: 2 vCPU / 4096 MiB")
    assert lines[1].startswith("FAIL ") and "bad-task/task.toml: verifier.timeout_sec" in lines[1]
