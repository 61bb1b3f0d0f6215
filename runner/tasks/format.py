"""The Harbor task format (Terminal-Bench's): read, check and fingerprint a task directory.

    task-name/
      task.toml          metadata; [verifier] and [agent] timeouts; [environment] size and image
      instruction.md     the task for an agent (not used by the oracle replay, but required)
      environment/       Dockerfile (and the files it copies) of the task's image
      solution/solve.sh  the oracle
      tests/test.sh      the verifier: writes the reward to /logs/verifier/reward.txt (or .json)

Harbor's own parser (the `harbor` package) needs Python 3.12 or later and brings its whole
harness with it, so task.toml is read here with a small msgspec schema of the fields a replay
uses. It accepts what Harbor accepts: Terminal-Bench 2.0's `memory = "2G"` and `storage` strings
as well as `memory_mb`/`storage_mb`, `version` or `schema_version`, a `docker_image` beside the
Dockerfile, extra keys anywhere, scripts without the executable bit or with comment lines before
the shebang (every script runs with bash). It refuses only what is unsafe or unusable, with a
TaskError naming the file and the field: a `.git`, a symlink leading out of the task, a file or a
task above the size bounds, a host path where a task path belongs. Pure: no Django, no sandbox.
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import msgspec

from runner.tasks import dockerfile

TASKS_DIR = Path(__file__).resolve().parent
# Bounds of what a replay uploads: generous for real tasks, small enough that a trial's untimed
# copy stays short and a mistaken folder (a dataset, a home directory) is refused at once.
MAX_FILE_BYTES = 16 * 2**20
MAX_TASK_BYTES = 64 * 2**20
MAX_FILES = 2000
MAX_CPUS = 64
MAX_MEMORY_MIB = 256 * 1024
MAX_TIMEOUT_S = 24 * 3600.0
DEFAULT_VERIFIER_TIMEOUT_S = 600.0
DEFAULT_AGENT_TIMEOUT_S = 600.0
DEFAULT_CPUS = 1
DEFAULT_MEMORY_MIB = 2048
REQUIRED_FILES = ("task.toml", "instruction.md", "solution/solve.sh", "tests/test.sh")

_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,79}$")
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(i?B?)\s*$", re.IGNORECASE)
_UNIT_MIB = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


class TaskError(ValueError):
    """A task directory that cannot be used, naming the file and the field."""


class _Timeout(msgspec.Struct, frozen=True):
    timeout_sec: float | None = None


class _Environment(msgspec.Struct, frozen=True):
    build_timeout_sec: float | None = None
    docker_image: str | None = None
    cpus: int | None = None
    memory: str | int | None = None
    memory_mb: int | None = None
    storage: str | int | None = None
    storage_mb: int | None = None


class _TaskToml(msgspec.Struct):
    # Extra keys ([metadata], [solution], gpus, ...) are accepted and ignored, as Harbor does.
    version: str | None = None
    schema_version: str | int | None = None
    metadata: dict = {}
    verifier: _Timeout = _Timeout()
    agent: _Timeout = _Timeout()
    environment: _Environment = _Environment()


@dataclass(frozen=True)
class Task:
    slug: str
    path: Path
    verifier_timeout_s: float
    agent_timeout_s: float
    cpus: int
    memory_mib: int
    storage_mib: int | None
    docker_image: str  # "" when the Dockerfile alone defines the image
    environment: dockerfile.Environment | None  # None when only docker_image is given
    metadata: dict
    files: tuple[str, ...]  # every file of the task, relative, sorted

    @property
    def builds_on_standard(self) -> bool:
        """Its image is the standard image plus steps every provider can replay in a sandbox."""
        return self.environment is not None and self.environment.on_standard

    def digest(self) -> str:
        """SHA-256 over every file's relative path and bytes: a changed task is another unit."""
        total = hashlib.sha256()
        for name in self.files:
            data = (self.path / name).read_bytes()
            total.update(f"{name}\0{len(data)}\0".encode())
            total.update(data)
        return total.hexdigest()


def size_mib(value: str | int, where: str) -> int:
    """MiB of a Harbor size: a whole number of MB, or text such as "2G", "512M", "1.5GiB"."""
    if isinstance(value, int) and not isinstance(value, bool):
        number, unit = float(value), ""
    else:
        match = _SIZE.match(str(value))
        if not match:
            raise TaskError(f"{where}: {value!r} is not a size such as 2G, 512M or 2048")
        number, unit = float(match.group(1)), match.group(2).upper()
    mib = number * _UNIT_MIB[unit]
    if mib < 1:
        raise TaskError(f"{where}: {value!r} is below 1 MiB")
    return int(round(mib))


def load_task(path: str | Path) -> Task:
    """Read and check one task directory; TaskError names the file and the field."""
    path = Path(path)
    if not path.is_dir():
        raise TaskError(f"{path}: not a directory")
    slug = path.resolve().name.lower()
    if not _SLUG.match(slug):
        raise TaskError(
            f"{path}: the folder name is the task's slug: lowercase letters, digits, '.', '_' "
            "and '-', at most 80 characters"
        )
    files = _walk(path)
    for name in REQUIRED_FILES:
        if name not in files:
            raise TaskError(f"{path / name}: missing (a task holds {', '.join(REQUIRED_FILES)})")
    for name in ("solution/solve.sh", "tests/test.sh"):
        _check_script(path / name)
    toml_path = path / "task.toml"
    try:
        raw = tomllib.loads((path / "task.toml").read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise TaskError(f"{toml_path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{toml_path}: not valid TOML: {exc}") from None
    try:
        parsed = msgspec.convert(raw, _TaskToml)
    except msgspec.ValidationError as exc:
        raise TaskError(f"{toml_path}: {_field_message(exc)}") from None
    env = parsed.environment
    cpus = _bounded(env.cpus, DEFAULT_CPUS, 1, MAX_CPUS, toml_path, "environment.cpus")
    memory = _size_field(env.memory_mb, env.memory, "memory", toml_path)
    storage = _size_field(env.storage_mb, env.storage, "storage", toml_path)
    memory = memory or DEFAULT_MEMORY_MIB
    if memory > MAX_MEMORY_MIB:
        raise TaskError(f"{toml_path}: environment.memory: {memory} MiB is above {MAX_MEMORY_MIB}")
    image = (env.docker_image or "").strip()
    if image and not _looks_like_image(image):
        raise TaskError(
            f"{toml_path}: environment.docker_image: {image!r} is not an image reference "
            "(a host path or a URL is not one)"
        )
    environment = None
    if "environment/Dockerfile" in files:
        try:
            environment = dockerfile.parse(path / "environment", files)
        except dockerfile.DockerfileError as exc:
            raise TaskError(str(exc)) from None
    elif not image:
        raise TaskError(
            f"{path / 'environment' / 'Dockerfile'}: missing, and task.toml names no "
            "environment.docker_image: the task has no environment"
        )
    return Task(
        slug=slug,
        path=path,
        verifier_timeout_s=_timeout(
            parsed.verifier, DEFAULT_VERIFIER_TIMEOUT_S, toml_path, "verifier"
        ),
        agent_timeout_s=_timeout(parsed.agent, DEFAULT_AGENT_TIMEOUT_S, toml_path, "agent"),
        cpus=cpus,
        memory_mib=memory,
        storage_mib=storage,
        docker_image=image,
        environment=environment,
        metadata=parsed.metadata,
        files=tuple(sorted(files)),
    )


def task_folders(root: str | Path) -> list[Path]:
    """The task directories of `root`: itself when it holds task.toml, else its subfolders that do."""
    root = Path(root)
    if (root / "task.toml").exists():
        return [root]
    if not root.is_dir():
        raise TaskError(f"{root}: not a directory")
    # Dot folders are left out: an import's copy in progress, or a folder being retired.
    return sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and not p.name.startswith(".") and (p / "task.toml").exists()
    )


def load_all(root: str | Path = TASKS_DIR) -> list[Task]:
    """Every task of `root`, checked; TaskError at the first that cannot be used."""
    folders = task_folders(root)
    if not folders:
        raise TaskError(f"{root}: holds no task (no task.toml in it or in a subfolder)")
    tasks = [load_task(folder) for folder in folders]
    seen: dict[str, Path] = {}
    for task in tasks:
        if task.slug in seen:
            raise TaskError(f"{task.path}: slug {task.slug!r} is also {seen[task.slug]}'s")
        seen[task.slug] = task.path
    return tasks


def check(root: str | Path) -> tuple[list[Task], list[str]]:
    """Every task of `root` that can be used, and one message for each that cannot."""
    tasks, problems = [], []
    try:
        folders = task_folders(root)
    except TaskError as exc:
        return [], [str(exc)]
    if not folders:
        return [], [f"{root}: holds no task (no task.toml in it or in a subfolder)"]
    for folder in folders:
        try:
            tasks.append(load_task(folder))
        except TaskError as exc:
            problems.append(str(exc))
    return tasks, problems


def _walk(root: Path) -> set[str]:
    """Every regular file under `root`, relative; refuses .git, links out, and oversize."""
    found: set[str] = set()
    total = 0
    real_root = root.resolve()
    for directory, dirs, names in os.walk(root):
        here = Path(directory)
        for name in dirs + names:
            item = here / name
            if name == ".git":
                raise TaskError(
                    f"{item}: a task holds no .git (a repository's history is no task file)"
                )
            if item.is_symlink():
                target = item.resolve()
                if not target.is_relative_to(real_root):
                    raise TaskError(f"{item}: a symlink leading out of the task (to {target})")
        for name in names:
            item = here / name
            if not item.is_file():
                raise TaskError(f"{item}: neither a file nor a folder (a device, socket or pipe)")
            size = item.stat().st_size
            if size > MAX_FILE_BYTES:
                raise TaskError(f"{item}: {size} bytes, above the {MAX_FILE_BYTES} a file may have")
            total += size
            found.add(item.relative_to(root).as_posix())
        if len(found) > MAX_FILES:
            raise TaskError(f"{root}: more than {MAX_FILES} files")
    if total > MAX_TASK_BYTES:
        raise TaskError(f"{root}: {total} bytes in all, above the {MAX_TASK_BYTES} a task may have")
    return found


def _check_script(path: Path) -> None:
    data = path.read_bytes()
    if not data.strip():
        raise TaskError(f"{path}: empty")
    if b"\0" in data:
        raise TaskError(f"{path}: not a script (it holds NUL bytes)")


def _field_message(exc: msgspec.ValidationError) -> str:
    """msgspec says "Expected `int`, got `str` - at `$.environment.cpus`": field first."""
    text = str(exc)
    message, _, where = text.rpartition(" - at `")
    if not message:
        return text
    field = where.rstrip("`").removeprefix("$").removeprefix(".")
    # TOML has no null: an absent key is the null the schema allows.
    return f"{field}: {message.replace(' | null', '')}"


def _bounded(value, default, low, high, where: Path, field: str):
    if value is None:
        return default
    if not low <= value <= high:
        raise TaskError(f"{where}: {field}: {value} is outside {low} to {high}")
    return value


def _size_field(mb, text, name: str, where: Path) -> int | None:
    if mb is not None:
        if mb < 1:
            raise TaskError(f"{where}: environment.{name}_mb: {mb} is below 1")
        return mb
    if text is None:
        return None
    return size_mib(text, f"{where}: environment.{name}")


def _timeout(section: _Timeout, default: float, where: Path, name: str) -> float:
    value = section.timeout_sec
    if value is None:
        return default
    if not 0 < value <= MAX_TIMEOUT_S:
        raise TaskError(f"{where}: {name}.timeout_sec: {value} is outside 0 to {MAX_TIMEOUT_S:g}")
    return float(value)


def _looks_like_image(reference: str) -> bool:
    if reference.startswith(("/", ".", "~")) or "://" in reference or " " in reference:
        return False
    return bool(re.match(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$", reference))
