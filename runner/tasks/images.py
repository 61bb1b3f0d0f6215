"""A task's own image, built from its environment/Dockerfile where the provider can build one.

A Dockerfile the standard image cannot replay in a sandbox (USER, SHELL, several stages, another
base) is built by the provider's container engine, untimed, before the trial's create: `FROM
boxbench-standard` (any tag) is pointed at the provider's pinned standard image, the build runs
without network, and the image is tagged by the task's digest, so a provider builds each task
once and every later trial reuses it (a provider image cache, which every customer gets). The
engine's image id is the digest the trial records. Adapters that build: BUILDERS, by adapter
name; the others leave such a task Not Supported (runner/rules.py).
"""

from __future__ import annotations

import io
import re
import tarfile

from runner.tasks.dockerfile import STANDARD_BASE
from runner.tasks.format import Task

BUILD_ADAPTERS = ("docker", "remote-docker")
_FROM_STANDARD = re.compile(
    rf"^(\s*FROM\s+){re.escape(STANDARD_BASE)}(?:[:@]\S+)?", re.IGNORECASE | re.MULTILINE
)


class BuildError(Exception):
    """The engine refused or failed the build; the message holds its last error line."""


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
