"""A pipeline unit's git bundle, made from its pinned source archive, and the untimed preparation.

`make_bundle` is how each shipped bundle was made: the archive unpacked and committed with the
traces' fixed identity and date, then bundled by one packing thread, so the same archive gives the
same commit and the same bundle bytes (tests/workloads/test_pipelines.py rebuilds every shipped
bundle and compares). `prepare_script` readies the sandbox before the timed replay: an empty git
repository in /app that the checkout step fetches the bundle into. Pure apart from `make_bundle`'s
git run on the host; no Django.
"""

from __future__ import annotations

import os
import subprocess
import tarfile
import tempfile
from pathlib import Path

from runner.pipelines.format import STAGING, Pipeline
from runner.traces.format import GIT_AUTHOR, GIT_DATE, GIT_EMAIL, is_git_member
from runner.traces.guard import SAFE_GIT_ENV, SAFE_GIT_EXPORT
from runner.traces.replay import GIT_EXCLUDES, STATE_DIR, WORKDIR

_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": GIT_AUTHOR,
    "GIT_AUTHOR_EMAIL": GIT_EMAIL,
    "GIT_COMMITTER_NAME": GIT_AUTHOR,
    "GIT_COMMITTER_EMAIL": GIT_EMAIL,
    "GIT_AUTHOR_DATE": GIT_DATE,
    "GIT_COMMITTER_DATE": GIT_DATE,
    "LC_ALL": "C",
    **SAFE_GIT_ENV,
}


class BundleError(RuntimeError):
    """The archive cannot be made into a bundle (unsafe member, git failed)."""


def make_bundle(archive: Path, out: Path, message: str) -> str:
    """Write the bundle of `archive` (an sdist: one top folder, stripped) to `out`; return the
    commit it holds."""
    with tempfile.TemporaryDirectory(prefix="boxbench-bundle-") as tmp:
        tree = Path(tmp) / "src"
        tree.mkdir()
        _unpack(archive, tree)
        env = {**os.environ, **_GIT_ENV}
        for argv in (
            ["git", "init", "-q", "-b", "main", "."],
            ["git", "config", "core.autocrlf", "false"],
            ["git", "add", "-A"],
            ["git", "commit", "-q", "-m", message],
            ["git", "-c", "pack.threads=1", "bundle", "create", "-q", str(out.resolve()), "main"],
        ):
            done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise BundleError(f"{' '.join(argv[:3])} failed: {done.stderr.strip()[-300:]}")
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=tree, env=env, capture_output=True, text=True
        )
        return head.stdout.strip()


def _unpack(archive: Path, tree: Path) -> None:
    """Extract with the top folder stripped, refusing links, paths that leave the tree and
    `.git` members (a planted repository's hooks would run at the commit)."""
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts[1:]
            if not parts:
                continue
            if (
                ".." in parts
                or is_git_member(member.name)
                or Path(member.name).is_absolute()
                or not (member.isfile() or member.isdir())
            ):
                raise BundleError(f"{archive.name}: refusing member {member.name!r}")
            target = tree.joinpath(*parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is None:
                raise BundleError(f"{archive.name}: cannot read {member.name!r}")
            target.write_bytes(source.read())
            target.chmod(0o755 if member.mode & 0o111 else 0o644)


def staged_files(pipeline: Pipeline) -> list[tuple[str, Path]]:
    """(sandbox path, local file) of everything the preparation uploads: the bundle, the wheels."""
    files = [(f"{STAGING}/{pipeline.bundle.file}", pipeline.bundle_path)]
    files += [(f"{STAGING}/wheels/{w.file}", pipeline.wheel_path(w)) for w in pipeline.wheels]
    return files


def prepare_script(workdir: str = WORKDIR) -> str:
    """Untimed: an empty git repository in the empty `workdir`, with the replay's state folder.

    The checkout step fetches the bundle into it; the replay's records live in its .git."""
    excludes = "\\n".join(GIT_EXCLUDES)
    return f"""set -eu
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C.UTF-8
{SAFE_GIT_EXPORT}
cd {workdir}
if [ -n "$(ls -A .)" ]; then echo "{workdir} is not empty" >&2; exit 1; fi
git init -q -b main .
git config core.autocrlf false
git config core.fileMode true
printf '{excludes}\\n' >> .git/info/exclude
mkdir -p {STATE_DIR}
"""
