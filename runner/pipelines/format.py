"""The CI pipeline unit format (schema_version 1): load, validate and fingerprint a pipeline.

A pipeline unit is a folder runner/pipelines/<slug>/ holding `pipeline.json` and the git bundle it
names; the wheels its install step needs come from the shared wheelhouse runner/pipelines/wheels/
and are pinned, each by its SHA-256, in the pipeline. docs/pipelines.md documents every field.
Validation is strict: a malformed pipeline is refused with a PipelineError naming the file and the
field. Pure: no Django, no sandbox.

A pipeline replays through the trace machinery (runner/traces/replay.py): its steps are the
commands, each expected to exit 0, and its result digest stands where a trace's patch digest does.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from runner.traces import classify
from runner.traces.format import Command, canonical_json, is_slug, read_json, sha256_file

SCHEMA_VERSION = 1
PIPELINES_DIR = Path(__file__).resolve().parent
WHEELHOUSE = PIPELINES_DIR / "wheels"
ECOSYSTEMS = ("python", "c")
# A step's kind, as CI files name their jobs' steps, and the classifier's stage it counts under:
# the spec's classes (deepswe.txt, "Metrics") put checkout with git's writes and linters with
# Build. The kind is declared rather than parsed, since a C test step (compile and run a test
# program) reads as a build to a command parser.
KINDS = {
    "checkout": classify.WRITE,
    "install": classify.INSTALL,
    "build": classify.BUILD,
    "lint": classify.BUILD,
    "test": classify.TEST,
}
# Where the untimed preparation puts the bundle and the wheels in the sandbox (outside /app, so
# nothing of them is in the checkout).
STAGING = "/tmp/boxbench-ci"
# Every step runs with the same file-creation mask and build date, so artifacts (wheels, static
# libraries) come out byte for byte the same in every sandbox.
SOURCE_DATE_EPOCH = 1735689600  # 2025-01-01T00:00:00Z, the standard image's own date
STEP_PREFIX = f"umask 022; export SOURCE_DATE_EPOCH={SOURCE_DATE_EPOCH}; "
MIN_STEPS, MAX_STEPS = 2, 20

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
# Artifact paths: relative, plain characters only, so `sha256sum` prints them unescaped.
_PATH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]*(/[A-Za-z0-9_][A-Za-z0-9._+-]*)*$")


class PipelineError(ValueError):
    """A pipeline file that cannot be used, with where and why."""


@dataclass(frozen=True)
class Pinned:
    """A file shipped with the unit and its SHA-256."""

    file: str
    sha256: str


@dataclass(frozen=True)
class Step:
    name: str
    kind: str
    run: str
    duration_ms: float  # recorded on `local`; sets the per-command limit

    @property
    def stage(self) -> str:
        return KINDS[self.kind]


@dataclass(frozen=True)
class Artifact:
    path: str
    sha256: str


@dataclass(frozen=True)
class Pipeline:
    slug: str
    title: str
    ecosystem: str
    description: str
    source: dict[str, str]  # archive, sha256, url: what the bundle was made from
    bundle: Pinned
    commit: str  # the bundle's main commit, checked out by the checkout step
    wheels: tuple[Pinned, ...]
    steps: tuple[Step, ...]
    artifacts: tuple[Artifact, ...]
    folder: Path

    @property
    def bundle_path(self) -> Path:
        return self.folder / self.bundle.file

    def wheel_path(self, wheel: Pinned) -> Path:
        return WHEELHOUSE / wheel.file

    # What the replay machinery reads of a session: its commands and the digest it must end with.
    @property
    def commands(self) -> tuple[Command, ...]:
        return tuple(Command(STEP_PREFIX + s.run, 0, s.duration_ms) for s in self.steps)

    @property
    def patch_sha256(self) -> str:
        return result_digest(self.commit, self.artifacts)

    @property
    def stages(self) -> list[str]:
        return [s.stage for s in self.steps]

    @property
    def recorded_ms(self) -> float:
        return sum(s.duration_ms for s in self.steps)

    def to_dict(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "slug": self.slug,
            "title": self.title,
            "ecosystem": self.ecosystem,
            "description": self.description,
            "source": dict(self.source),
            "bundle": {**self.bundle.__dict__, "commit": self.commit},
            "wheels": [w.__dict__ for w in self.wheels],
            "steps": [s.__dict__ for s in self.steps],
            "artifacts": [a.__dict__ for a in self.artifacts],
        }

    def digest(self) -> str:
        """SHA-256 of the canonical pipeline content: changes whenever comparability would."""
        return hashlib.sha256(canonical_json(self.to_dict()).encode()).hexdigest()


def result_digest(commit: str, artifacts: tuple[Artifact, ...]) -> str:
    """What the verify snippet hashes when the run is right: the checked-out commit, then
    `sha256sum` of each artifact, in the pipeline's order."""
    listing = f"{commit}\n" + "".join(f"{a.sha256}  {a.path}\n" for a in artifacts)
    return hashlib.sha256(listing.encode()).hexdigest()


def verify_snippet(pipeline: Pipeline) -> str:
    """Bash that sets $__bb_digest to the run's result digest (see result_digest) and writes the
    listing it hashed to the output log, so a mismatch shows which artifact differs. A missing
    artifact leaves its line out, which no pinned digest matches."""
    paths = " ".join(a.path for a in pipeline.artifacts)
    return (
        f"__bb_listing=$( git rev-parse HEAD; sha256sum -- {paths} )\n"
        "printf 'result:\\n%s\\n' \"$__bb_listing\" >&4\n"
        "__bb_digest=$( printf '%s\\n' \"$__bb_listing\" | sha256sum )\n"
        "__bb_digest=${__bb_digest%% *}\n"
    )


def load_pipeline(path: Path | str, check_files: bool = True) -> Pipeline:
    """Read and validate one pipeline.json; with check_files, also its bundle's and wheels'
    SHA-256."""
    path = Path(path)
    pipeline = parse_pipeline(read_json(path, PipelineError, "pipeline"), path)
    if check_files:
        verify_files(pipeline)
    return pipeline


def parse_pipeline(raw: object, path: Path) -> Pipeline:
    """Validate a decoded pipeline.json object; every error names the file and the field."""

    def fail(where: str, problem: str) -> PipelineError:
        return PipelineError(f"{path}: {where}: {problem}")

    fields = (
        *("schema_version", "slug", "title", "ecosystem", "description"),
        *("source", "bundle", "wheels", "steps", "artifacts"),
    )
    obj = _object(raw, "top level", fields, fail)
    version = obj.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise fail("schema_version", f"must be {SCHEMA_VERSION}, got {version!r}")
    slug = _text(obj, "slug", fail)
    if not is_slug(slug):
        raise fail("slug", f"must be lowercase letters, digits and dashes, got {slug!r}")
    if path.name == "pipeline.json" and path.parent.name != slug:
        raise fail("slug", f"{slug!r} must match the unit folder name {path.parent.name!r}")
    ecosystem = _text(obj, "ecosystem", fail)
    if ecosystem not in ECOSYSTEMS:
        raise fail("ecosystem", f"must be one of {', '.join(ECOSYSTEMS)}, got {ecosystem!r}")
    source = _object(obj.get("source"), "source", ("archive", "sha256", "url"), fail)
    for key in ("archive", "sha256", "url"):
        _text(source, key, fail, where=f"source.{key}")
    _sha(source["sha256"], "source.sha256", fail)
    bundle = _object(obj.get("bundle"), "bundle", ("file", "sha256", "commit"), fail)
    commit = bundle.get("commit")
    if not isinstance(commit, str) or not _COMMIT.match(commit):
        raise fail("bundle.commit", f"must be 40 lowercase hex digits, got {commit!r}")
    wheels = obj.get("wheels", [])
    if not isinstance(wheels, list):
        raise fail("wheels", "must be a list")
    steps = obj.get("steps")
    if not isinstance(steps, list) or not MIN_STEPS <= len(steps) <= MAX_STEPS:
        raise fail("steps", f"must be a list of {MIN_STEPS} to {MAX_STEPS} steps")
    parsed = tuple(_step(i, s, fail) for i, s in enumerate(steps))
    if parsed[0].kind != "checkout" or any(s.kind == "checkout" for s in parsed[1:]):
        raise fail("steps", "the first step, and only the first, must be the checkout")
    artifacts = obj.get("artifacts")
    if not isinstance(artifacts, list) or not artifacts:
        raise fail("artifacts", "must be a non-empty list: the build's verified result")
    return Pipeline(
        slug=slug,
        title=_text(obj, "title", fail),
        ecosystem=ecosystem,
        description=_text(obj, "description", fail),
        source={k: source[k] for k in ("archive", "sha256", "url")},
        bundle=_pinned(bundle, "bundle", fail),
        commit=commit,
        wheels=tuple(_pinned(w, f"wheels[{i}]", fail) for i, w in enumerate(wheels)),
        steps=parsed,
        artifacts=tuple(_artifact(i, a, fail) for i, a in enumerate(artifacts)),
        folder=path.parent,
    )


def _object(raw: object, where: str, known: tuple[str, ...], fail) -> dict:
    if not isinstance(raw, dict):
        raise fail(where, f"must be an object with {', '.join(known)}")
    for key in raw:
        if key not in known:
            raise fail(key if where == "top level" else f"{where}.{key}", "unknown field")
    return raw


def _text(raw: dict, key: str, fail, where: str = "") -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise fail(where or key, f"must be a non-empty string, got {value!r}")
    return value


def _sha(value: object, where: str, fail) -> str:
    if not isinstance(value, str) or not _SHA256.match(value):
        raise fail(where, f"must be 64 lowercase hex digits, got {value!r}")
    return value


def _pinned(raw: object, where: str, fail) -> Pinned:
    known = ("file", "sha256", "commit") if where == "bundle" else ("file", "sha256")
    obj = _object(raw, where, known, fail)
    name = obj.get("file")
    if not isinstance(name, str) or not _FILE.match(name):
        raise fail(f"{where}.file", f"must be a plain file name, got {name!r}")
    return Pinned(file=name, sha256=_sha(obj.get("sha256"), f"{where}.sha256", fail))


def _step(index: int, raw: object, fail) -> Step:
    where = f"steps[{index}]"
    obj = _object(raw, where, ("name", "kind", "run", "duration_ms"), fail)
    kind = obj.get("kind")
    if kind not in KINDS:
        raise fail(f"{where}.kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
    run = _text(obj, "run", fail, where=f"{where}.run")
    if "\x00" in run:
        raise fail(f"{where}.run", "must not contain NUL characters")
    duration = obj.get("duration_ms")
    if (
        not isinstance(duration, int | float)
        or isinstance(duration, bool)
        or not 0 <= duration < 3_600_000
    ):
        raise fail(f"{where}.duration_ms", f"must be 0 ms to 1 h, got {duration!r}")
    name = _text(obj, "name", fail, where=f"{where}.name")
    return Step(name=name, kind=kind, run=run, duration_ms=float(duration))


def _artifact(index: int, raw: object, fail) -> Artifact:
    where = f"artifacts[{index}]"
    obj = _object(raw, where, ("path", "sha256"), fail)
    path = obj.get("path")
    if not isinstance(path, str) or not _PATH.match(path) or ".." in path.split("/"):
        raise fail(f"{where}.path", f"must be a plain relative path, got {path!r}")
    return Artifact(path=path, sha256=_sha(obj.get("sha256"), f"{where}.sha256", fail))


def verify_files(pipeline: Pipeline) -> None:
    """The bundle and every wheel exist with their pinned SHA-256."""
    where = pipeline.folder / "pipeline.json"
    shipped = [("bundle", pipeline.bundle_path, pipeline.bundle.sha256)]
    shipped += [
        (f"wheels[{i}]", pipeline.wheel_path(w), w.sha256) for i, w in enumerate(pipeline.wheels)
    ]
    for field_name, path, pinned in shipped:
        if not path.is_file():
            raise PipelineError(f"{where}: {field_name}: {path} is missing")
        actual = sha256_file(path)
        if actual != pinned:
            raise PipelineError(
                f"{where}: {field_name}: {path.name} has SHA-256 {actual}, the pipeline pins "
                f"{pinned}"
            )


def pipeline_folders(root: Path = PIPELINES_DIR) -> list[Path]:
    """Unit folders under `root` (those holding a pipeline.json), sorted by name."""
    return sorted(p.parent for p in root.glob("*/pipeline.json"))


def load_all(root: Path = PIPELINES_DIR) -> list[Pipeline]:
    return [load_pipeline(folder / "pipeline.json") for folder in pipeline_folders(root)]
