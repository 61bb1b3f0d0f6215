"""A task's own image, built from its environment/Dockerfile where the provider can build one.

A Dockerfile the standard image cannot replay in a sandbox (USER, SHELL, several stages, another
base) is built by the provider's container engine, untimed, before the trial's create: `FROM
boxbench-standard` (any tag) is pointed at the provider's pinned standard image, the build runs
without network, and the image is tagged by the task's digest, so a provider builds each task
once and every later trial reuses it (a provider image cache, which every customer gets). The
engine's image id is the digest the trial records. Engines that build: BUILD_ADAPTERS.

Cloud adapters build through their own template or image mechanism (TEMPLATE_ADAPTERS): the
adapter's `build_task_image(task)` builds the task's image once per (provider account, task
digest), untimed, at the task's declared size where the template fixes it, and answers the
provider's immutable identifier of what it built (E2B: the template id and build id). Adapters in
neither list leave such a task Not Supported (runner/rules.py), with `NO_BUILD`'s reason.

A build the provider reports as failed (a step that exits non-zero, a base it cannot pull, a
Dockerfile its builder refuses) is the task's failure to build there, as it is on docker: a
benchmark error for the unit (BuildError), never counted against the provider. A build request
the provider's API refuses or drops (429, 5xx, a reset) is a provider failure like any call.
"""

from __future__ import annotations

import io
import re
import tarfile
import threading
from collections.abc import Callable
from dataclasses import dataclass

from runner.tasks.dockerfile import STANDARD_BASE
from runner.tasks.format import Task

BUILD_ADAPTERS = ("docker", "remote-docker")
TEMPLATE_ADAPTERS = ("e2b", "modal")
# Why an adapter builds no task image, for the Not Supported refusal.
NO_BUILD = {
    "vercel": "Vercel sandboxes start only from Vercel's own runtimes or a snapshot, never from "
    "an image or a Dockerfile",
    "daytona": "boxbench's Daytona adapter does not build snapshots from a Dockerfile yet",
    "local": "local sandboxes bind the host's own toolchain and have no image",
    "null": "the null provider's sandboxes run nothing",
}
_FROM_STANDARD = re.compile(
    rf"^(\s*FROM\s+){re.escape(STANDARD_BASE)}(?:[:@]\S+)?", re.IGNORECASE | re.MULTILINE
)


@dataclass(frozen=True)
class BuiltImage:
    """What a provider answered for a built task image: its immutable identifier (an engine's
    image id, E2B's template id), which the sandbox is created from, and the build's own id
    where the provider has one."""

    identifier: str
    build: str


class BuildError(Exception):
    """The engine refused or failed the build; the message holds its last error line."""


# Task images built in this process, by (provider account, image name): the name carries the
# task's digest, so a trial of the same task reuses the image and a changed task builds its own.
# A build the provider reported failed is kept too: the same Dockerfile fails the same way.
_BUILT: dict[tuple[str, str], BuiltImage | BuildError] = {}
_LOCKS: dict[tuple[str, str], threading.Lock] = {}
_LOCK = threading.Lock()


def build_once(account: str, name: str, build: Callable[[], BuiltImage]) -> BuiltImage:
    """`build()` once per (account, name) in this process; later callers get its image, or its
    BuildError again. A provider failure (any other exception) is not kept: the next trial
    tries again."""
    key = (account, name)
    with _LOCK:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        known = _BUILT.get(key)
        if isinstance(known, BuildError):
            raise BuildError(str(known))
        if known is not None:
            return BuiltImage(known.identifier, "")
        try:
            made = build()
        except BuildError as exc:
            _BUILT[key] = exc
            raise
        _BUILT[key] = made
        return made


def built_here(identifier: str) -> bool:
    """Whether `identifier` is a task image this process built (an adapter creates from it)."""
    return any(isinstance(b, BuiltImage) and b.identifier == identifier for b in _BUILT.values())


def dockerfile_on(task: Task, standard_reference: str) -> str:
    """The task's Dockerfile with `FROM boxbench-standard` pointed at the provider's reference
    of the standard image."""
    text = (task.path / "environment" / "Dockerfile").read_text(encoding="utf-8")
    return _FROM_STANDARD.sub(rf"\g<1>{standard_reference}", text)


def builders() -> tuple[str, ...]:
    """Every adapter that builds a task's image, engines and template mechanisms alike."""
    return BUILD_ADAPTERS + TEMPLATE_ADAPTERS


def why_no_build(adapter: str) -> str:
    return NO_BUILD.get(adapter, f"{adapter} builds no task image")


def names_standard(task: Task) -> bool:
    """Whether the task's Dockerfile starts FROM the standard image (any tag or digest)."""
    base = task.environment.base if task.environment else ""
    return re.split(r"[:@]", base, maxsplit=1)[0] == STANDARD_BASE


def template_name(task: Task) -> str:
    """A provider-side name for the task's built image, by its digest: the same task finds its
    earlier build, a changed one gets a new name."""
    return f"boxbench-task-{task.slug}-{task.digest()[:16]}"


def image_tag(task: Task) -> str:
    return f"boxbench-task-{task.slug}:{task.digest()[:16]}"


def build_context(task: Task, standard_reference: str) -> bytes:
    """The environment folder as a build context, its FROM the provider's standard image."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in task.files:
            if not name.startswith("environment/"):
                continue
            data = (task.path / name).read_bytes()
            relative = name.removeprefix("environment/")
            if relative == "Dockerfile":
                text = _FROM_STANDARD.sub(rf"\g<1>{standard_reference}", data.decode())
                data = text.encode()
            info = tarfile.TarInfo(relative)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def build_on_engine(provider, task: Task) -> str:
    """Build (or find) the task's image on a Docker API engine; returns its image id."""
    import docker.errors  # the docker adapter's SDK, present wherever that adapter runs

    tag = image_tag(task)
    try:
        return provider.api.inspect_image(tag)["Id"]
    except docker.errors.NotFound:
        pass
    reference, _ = provider.standard_image()
    context = build_context(task, reference)
    try:
        messages = list(
            provider.api.build(
                fileobj=io.BytesIO(context),
                custom_context=True,
                tag=tag,
                rm=True,
                forcerm=True,
                network_mode="none",
                labels={"boxbench.kind": "task-image"},
                decode=True,
            )
        )
    except docker.errors.APIError as exc:
        raise BuildError(f"the engine refused to build {tag}: {exc.explanation or exc}") from None
    errors = [m["error"] for m in messages if isinstance(m, dict) and m.get("error")]
    if errors:
        raise BuildError(f"building {tag} failed: {str(errors[-1]).strip()[:300]}")
    try:
        return provider.api.inspect_image(tag)["Id"]
    except docker.errors.NotFound:
        raise BuildError(f"the engine built {tag} but does not list it") from None
