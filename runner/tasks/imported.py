"""Tasks a user imports (`bench run --benchmark terminal-bench --tasks DIR`): checked, then copied
whole into the imported-tasks folder, where the workload's units() finds them on every later call
(the planner's and each chain worker's). A folder with any unusable task is refused whole and
nothing is copied; each task lands by one rename, so no half-copied task is ever seen.

The folder is $BOXBENCH_IMPORTED_TASKS_DIR, else tasks/ in the var folder ($BOXBENCH_VAR_DIR, else
var/ beside the code), as boxbench/settings.py places it. Pure: no Django.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from runner.tasks.format import TASKS_DIR, Task, TaskError, check, task_folders

_REPOSITORY = Path(__file__).resolve().parents[2]


def root() -> Path:
    explicit = os.environ.get("BOXBENCH_IMPORTED_TASKS_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("BOXBENCH_VAR_DIR") or _REPOSITORY / "var") / "tasks"


def load() -> list[Task]:
    """The imported tasks that can be used now (one changed by hand since is left out)."""
    folder = root()
    if not folder.is_dir():
        return []
    tasks, _ = check(folder)
    return tasks


def import_tasks(source: str | Path) -> list[Task]:
    """Check every task of `source` and copy them in; TaskError lists every problem found."""
    tasks, problems = check(source)
    shipped = {p.name for p in task_folders(TASKS_DIR)}
    problems += [
        f"{t.path}: slug {t.slug!r} is one of boxbench's own tasks; rename the folder"
        for t in tasks
        if t.slug in shipped
    ]
    if problems:
        raise TaskError("; ".join(problems))
    target = root()
    target.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        incoming = target / f".incoming-{uuid.uuid4().hex}"
        try:
            shutil.copytree(task.path, incoming, symlinks=False)
            final = target / task.slug
            if final.exists():
                retired = target / f".retired-{uuid.uuid4().hex}"
                final.rename(retired)
                shutil.rmtree(retired)
            incoming.rename(final)
        finally:
            if incoming.exists():
                shutil.rmtree(incoming)
    wanted = {task.slug for task in tasks}
    return [task for task in load() if task.slug in wanted]
