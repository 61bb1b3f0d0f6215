"""`bench tasks check DIR`: validate a Harbor-format task folder, or a folder of them.

Each task is checked against the format and boxbench's safety rules (runner/tasks/format.py):
every usable task is listed with its size and whether its environment replays on the standard
image; every unusable one is named with the file and the field, and the command fails.
"""

from django.core.management.base import CommandError

from runner.tasks.format import check

help = "Check Terminal-Bench (Harbor format) task folders before a run."


def add_arguments(parser):
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    checking = sub.add_parser("check", help="Check a task folder or a folder of task folders.")
    checking.add_argument("directory", help="A task folder (with task.toml) or a folder of them.")


def handle(options, out):
    tasks, problems = check(options["directory"])
    for task in tasks:
        if task.builds_on_standard:
            environment = "replays on the standard image"
        else:
            why = task.environment.why_not if task.environment else "a prebuilt image only"
            environment = f"needs an image build: {why}"
        out.write(
            f"ok   {task.slug}: {task.cpus} vCPU / {task.memory_mib} MiB, "
            f"solve limit {task.agent_timeout_s:g} s, verify limit {task.verifier_timeout_s:g} s; "
            f"{environment}"
        )
    for problem in problems:
        out.write(f"FAIL {problem}")
    if problems:
        raise CommandError(
            f"{len(problems)} of {len(tasks) + len(problems)} task(s) cannot be used"
        )
    out.write(f"{len(tasks)} task(s) can be used")
