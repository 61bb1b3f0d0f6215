"""Record a pipeline unit's pins on this host:
`python -m runner.pipelines.record --unsafe-on-host FOLDER`.

From a pipeline.json whose steps and artifact paths are written (the pins may be stale or zero),
it makes the bundle from the pinned source archive (found by name under runner/traces/ and checked
against `source.sha256`), pins the bundle, its commit and every wheel, runs each step once in a
fresh repository the way the replay does (same step prefix, locale, git settings, home outside
the checkout), then pins each step's duration and each artifact's SHA-256 and writes the file
back. The pins are the job host's toolchain's; docs/pipelines.md says how they were made. Steps
read the bundle and wheels from /tmp/boxbench-ci, as in a sandbox, so recording writes there.
The steps run unsandboxed with the operator's rights: refused without `--unsafe-on-host`, and
warned about even then.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from runner.pipelines.bundle import make_bundle
from runner.pipelines.format import STAGING, STEP_PREFIX, WHEELHOUSE, PipelineError, load_pipeline
from runner.traces.format import TRACES_DIR, read_json, sha256_file

_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LC_ALL": "C.UTF-8",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_NO_INPUT": "1",
    "TERM": "dumb",
}
STEP_LIMIT_S = 1800


def source_archive(raw: dict, traces: Path = TRACES_DIR) -> Path:
    """The unit's pinned sdist among the DeepSWE units' archives."""
    source = raw.get("source")
    if not isinstance(source, dict):
        raise PipelineError("the pipeline needs a source object naming its archive")
    for archive in sorted(traces.glob("*/*.tar.gz")):
        if archive.name == source.get("archive") and sha256_file(archive) == source.get("sha256"):
            return archive
    raise PipelineError(f"no archive {source.get('archive')!r} with the pinned SHA-256 in {traces}")


def record(folder: Path) -> dict:
    """Pin `folder`'s pipeline on this host and write it back; returns what was written."""
    path = folder / "pipeline.json"
    raw = read_json(path, PipelineError, "pipeline")
    if not isinstance(raw, dict) or not isinstance(raw.get("bundle"), dict):
        raise PipelineError(f"{path}: needs a bundle object naming its file")
    bundle = folder / str(raw["bundle"].get("file"))
    raw["bundle"]["commit"] = make_bundle(source_archive(raw), bundle, f"boxbench: {folder.name}")
    raw["bundle"]["sha256"] = sha256_file(bundle)
    for wheel in raw.get("wheels", []):
        wheel["sha256"] = sha256_file(WHEELHOUSE / wheel["file"])
    stage = Path(STAGING)
    (stage / "wheels").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(bundle, stage / bundle.name)
    for wheel in raw.get("wheels", []):
        shutil.copyfile(WHEELHOUSE / wheel["file"], stage / "wheels" / wheel["file"])
    with tempfile.TemporaryDirectory(prefix="boxbench-record-") as tmp:
        workdir, home = Path(tmp) / "app", Path(tmp) / "home"
        workdir.mkdir()
        home.mkdir()
        env = {**_ENV, "HOME": str(home)}
        subprocess.run(["git", "init", "-q", "-b", "main", "."], cwd=workdir, env=env, check=True)
        for index, step in enumerate(raw["steps"]):
            step["duration_ms"] = _run_step(index, step, workdir, env, path)
        for artifact in raw["artifacts"]:
            built = workdir / artifact["path"]
            if not built.is_file():
                raise PipelineError(f"{path}: artifact {artifact['path']} was not built")
            artifact["sha256"] = sha256_file(built)
    path.write_text(json.dumps(raw, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    load_pipeline(path)  # what was written must load, pins and all
    return raw


def _run_step(index: int, step: dict, workdir: Path, env: dict, path: Path) -> float:
    start = time.monotonic()
    done = subprocess.run(
        ["bash", "-c", STEP_PREFIX + step["run"]],
        cwd=workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=STEP_LIMIT_S,
    )
    elapsed = round((time.monotonic() - start) * 1000, 3)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).decode(errors="replace")[-2000:]
        raise PipelineError(f"{path}: steps[{index}] exited {done.returncode}:\n{tail}")
    return elapsed


UNSAFE_FLAG = "--unsafe-on-host"


def main(argv: list[str]) -> int:
    usage = f"usage: python -m runner.pipelines.record {UNSAFE_FLAG} runner/pipelines/<slug>"
    if len(argv) != 2 or argv[0] != UNSAFE_FLAG:
        print(usage, file=sys.stderr)
        print(
            f"recording runs the unit's steps on this machine, outside any sandbox, with your "
            f"rights and files: {UNSAFE_FLAG} says you mean it",
            file=sys.stderr,
        )
        return 2
    print("warning: the unit's steps run unsandboxed on this machine", file=sys.stderr)
    argv = argv[1:]
    try:
        raw = record(Path(argv[0]))
    except PipelineError as exc:
        print(exc, file=sys.stderr)
        return 1
    total = sum(s["duration_ms"] for s in raw["steps"]) / 1000
    print(f"{raw['slug']}: {len(raw['steps'])} steps, {total:.1f} s, pins written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
