"""A folder of Terminal-Bench (Harbor format) tasks from outside, run end to end with
`bench run --benchmark terminal-bench --tasks DIR`: imported, run on local, audited, published,
and shown on its pages and downloads with the note that these are not Terminal-Bench 4.0's."""

import dataclasses
import io
import shutil

import pytest
from django.core.management import CommandError, call_command

from boxbench.models import Run, Trial
from runner.benchmarks import terminal_bench
from runner.tasks.format import TASKS_DIR


@pytest.fixture
def outside_tasks(tmp_path, monkeypatch):
    """A user's task folder (one task, copied from a shipped one under another name) and an
    imported-tasks folder of the test's own; one success ranks."""
    monkeypatch.setenv("BOXBENCH_IMPORTED_TASKS_DIR", str(tmp_path / "imported"))
    floor = dataclasses.replace(terminal_bench.DEFINITION, ranking_floor=1)
    monkeypatch.setattr(terminal_bench, "DEFINITION", floor)
    source = tmp_path / "my-dataset"
    shutil.copytree(TASKS_DIR / "reproducible-archive", source / "pack-my-site")
    return source


@pytest.mark.django_db(transaction=True)
def test_an_imported_folder_runs_audits_publishes_and_shows_on_pages_and_csv(
    outside_tasks, chain_provider, sync_queue, client
):
    out = io.StringIO()
    argv = ["--benchmark", "terminal-bench", "--tasks", str(outside_tasks), "--trials", "1"]
    argv += ["--concurrency", "1"]
    call_command("bench", "run", *argv, "--provider", "local", "--publish", stdout=out)
    assert "Imported 1 task(s)" in out.getvalue() and "Published run" in out.getvalue()
    run = Run.objects.get()
    assert run.manifest["benchmarks"][terminal_bench.SLUG]["units"] == ["pack-my-site"]
    [trial] = Trial.objects.filter(run=run)
    assert trial.outcome == "success"
    slug = terminal_bench.SLUG
    page = client.get(f"/benchmarks/{slug}/")
    assert page.status_code == 200 and "not Terminal-Bench 4.0" in page.content.decode()
    # The index lists it in the Workload section, where DeepSWE, CI and RL are listed.
    index = client.get("/benchmarks/").content.decode()
    workloads = index[index.index("Workload") :]
    assert "Terminal-Bench-style tasks (boxbench units)" in workloads
    unit_page = client.get(f"/benchmarks/{slug}/units/pack-my-site/")
    assert unit_page.status_code == 200
    board = client.get(f"/benchmarks/{slug}.csv").content.decode()
    assert "local" in board and "not Terminal-Bench 4.0's tasks" in board
    raw = b"".join(client.get(f"/runs/{run.id}/raw.csv").streaming_content).decode()
    assert "pack-my-site" in raw and "task_time" in raw


@pytest.mark.django_db(transaction=True)
def test_a_malformed_folder_is_refused_before_anything_is_planned_or_imported(
    outside_tasks, tmp_path
):
    toml = outside_tasks / "pack-my-site" / "task.toml"
    toml.write_text(toml.read_text().replace("cpus = 2", 'cpus = "two"'))
    with pytest.raises(CommandError, match=r"pack-my-site/task.toml: environment.cpus"):
        call_command("bench", "run", "--tasks", str(outside_tasks), stdout=io.StringIO())
    assert not Run.objects.exists()
    assert not (tmp_path / "imported").exists() or not any((tmp_path / "imported").iterdir())
