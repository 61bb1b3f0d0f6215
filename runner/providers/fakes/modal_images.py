"""Modal's image builds from a Dockerfile, as the Modal fake (fakes/modal.py) serves them to the
`modal` client's `Image.from_dockerfile(...).build(app)` (modal/_image.py, modal/mount.py):

- the COPY sources go up as a context mount: `MountBatchedCheckExistence` (which file hashes
  the server lacks), `MountPutFile` (each missing file's bytes), `MountGetOrCreate` (the
  mount's index: remote path, hash, mode);
- the image is layered as the client's builder version does it (after 2025.06): one image of
  the Dockerfile's FROM line alone, then `FROM base` and the remaining lines over it, with the
  context mount; `ImageGetOrCreate` answers an id with no result while a build runs, and
  `ImageJoinStreaming` answers its result (success, or failure with the error) when done.

The fake builds on a sandbox of its local backend (fakes/builds.py): a FROM naming the standard
image (`boxbench-standard`, any registry or tag) starts from a fresh sandbox; any other base
would be pulled from a registry, which the fake has none of, so that build fails as a pull
does; a Dockerfile of several stages (which Modal builds as one layer) fails at its second
FROM. A built image is a snapshot image a create starts from, as Modal's image ids are.
"""

from __future__ import annotations

import asyncio
import io
import re
import secrets
import tarfile
import threading
from dataclasses import dataclass, field
from typing import Any

from grpclib import GRPCError, Status
from modal_proto import api_pb2

from runner.providers.fakes.builds import FakeBuild, StepFailed

GENERIC = api_pb2.GenericResult
STANDARD = re.compile(r"(^|/)boxbench-standard([:@]|$)")
_FROM = re.compile(r"^\s*FROM\s+(\S+)", re.IGNORECASE)


@dataclass
class ImageBuild:
    done: threading.Event = field(default_factory=threading.Event)
    error: str = ""  # the build's failure, "" when it succeeded


class ImageBuilds:
    """The fake's build state: uploaded files, mounts, image bases and builds under way."""

    def __init__(self):
        self.files: dict[str, bytes] = {}  # by sha256 hex
        self.mounts: dict[str, list[tuple[str, str, int]]] = {}  # id: (path, sha256, mode)
        self.bases: dict[str, str] = {}  # image id: the registry reference its FROM names
        self.builds: dict[str, ImageBuild] = {}  # image id
        self.lock = threading.Lock()

    def context(self, mount_id: str) -> bytes:
        """The mount's files as a tar.gz, paths relative to the build context."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for path, digest, mode in self.mounts.get(mount_id, []):
                data = self.files[digest]
                info = tarfile.TarInfo(path.lstrip("/"))
                info.size, info.mode = len(data), mode & 0o7777 or 0o644
                tar.addfile(info, io.BytesIO(data))
        return buffer.getvalue()


class ImageBuildRpcs:
    """The control plane's RPCs of a Dockerfile build (a mixin of fakes/modal.py's)."""

    fake: Any  # the ModalFake, set by the control plane
    served = frozenset(
        {"MountBatchedCheckExistence", "MountPutFile", "MountGetOrCreate", "ImageJoinStreaming"}
    )

    async def MountBatchedCheckExistence(self, stream):  # noqa: N802
        request = await self._begin(stream, "MountBatchedCheckExistence")  # type: ignore[attr-defined]
        known = self.fake.image_builds.files
        missing = [h for h in request.sha256_hex_hashes if h not in known]
        await stream.send_message(
            api_pb2.MountBatchedCheckExistenceResponse(missing_sha256_hex_hashes=missing)
        )

    async def MountPutFile(self, stream):  # noqa: N802
        request = await self._begin(stream, "MountPutFile")  # type: ignore[attr-defined]
        if request.data_blob_id:
            raise GRPCError(Status.UNIMPLEMENTED, "the boxbench fake takes files inline only")
        builds: ImageBuilds = self.fake.image_builds
        with builds.lock:
            builds.files[request.sha256_hex] = request.data
        await stream.send_message(api_pb2.MountPutFileResponse(exists=True))

    async def MountGetOrCreate(self, stream):  # noqa: N802
        request = await self._begin(stream, "MountGetOrCreate")  # type: ignore[attr-defined]
        builds: ImageBuilds = self.fake.image_builds
        missing = [f.filename for f in request.files if f.sha256_hex not in builds.files]
        if missing:
            raise GRPCError(Status.FAILED_PRECONDITION, f"files never uploaded: {missing[:3]}")
        mount_id = f"mo-{secrets.token_hex(11)}"
        with builds.lock:
            builds.mounts[mount_id] = [(f.filename, f.sha256_hex, f.mode) for f in request.files]
        await stream.send_message(api_pb2.MountGetOrCreateResponse(mount_id=mount_id))

    async def ImageJoinStreaming(self, stream):  # noqa: N802
        request = await self._begin(stream, "ImageJoinStreaming")  # type: ignore[attr-defined]
        builds: ImageBuilds = self.fake.image_builds
        build = builds.builds.get(request.image_id)
        if build is None:
            raise GRPCError(Status.NOT_FOUND, f"Image {request.image_id} not found")
        finished = await asyncio.to_thread(build.done.wait, request.timeout or 55)
        if not finished:
            await stream.send_message(api_pb2.ImageJoinStreamingResponse(eof=False))
            return
        if build.error:
            result = GENERIC(status=GENERIC.GENERIC_STATUS_FAILURE, exception=build.error)
        else:
            result = GENERIC(status=GENERIC.GENERIC_STATUS_SUCCESS)
        await stream.send_message(
            api_pb2.ImageJoinStreamingResponse(
                result=result, eof=True, metadata=api_pb2.ImageMetadata()
            )
        )


def start_build(fake, image_id: str, image) -> bool:
    """Note the image's base and, for a Dockerfile layer over a base image, start building it;
    True while that build runs (the answer then carries no result)."""
    builds: ImageBuilds = fake.image_builds
    commands = _lines(image.dockerfile_commands)
    first = _FROM.match(commands[0]) if commands else None
    if first and not image.base_images:
        with builds.lock:
            builds.bases[image_id] = first.group(1)
    if len(commands) <= 1:
        return False  # a registry image (its FROM alone): nothing to build here
    with builds.lock:
        if image_id in builds.builds:
            return not builds.builds[image_id].done.is_set()
        build = builds.builds[image_id] = ImageBuild()
    fake.backend.in_background(_build, fake, image_id, image, commands, build)
    return True


def _build(fake, image_id: str, image, commands: list[str], build: ImageBuild) -> None:
    builds: ImageBuilds = fake.image_builds
    made = None
    try:
        # The layer over a base image, or a Dockerfile Modal keeps whole (several stages).
        base = image.base_images[0].image_id if image.base_images else image_id
        files = fake.snapshots[base].local if base in fake.snapshots else None
        if files is None and not STANDARD.search(builds.bases.get(base, "")):
            raise StepFailed(
                f"failed to pull {builds.bases.get(base, base)}: this stand-in reaches no registry",
                "1",
            )
        made = FakeBuild(fake.backend.local, files, 2, 4096, image_id)
        context = builds.context(image.context_mount_id) if image.context_mount_id else b""
        for number, line in enumerate(commands[1:], start=2):
            _step(made, line, str(number), context)
        fake.keep_built_image(image_id, made.finish())
    except StepFailed as exc:
        build.error = f"Step {exc.step}: {exc}"
    finally:
        if made is not None:
            made.close()
        build.done.set()


def _lines(commands) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments and blanks dropped."""
    lines, pending = [], ""
    for raw in commands:
        line = raw.strip()
        if not line or (line.startswith("#") and not pending):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending.strip())
    return lines


def _step(made: FakeBuild, line: str, number: str, context: bytes) -> None:
    instruction, _, rest = line.strip().partition(" ")
    instruction, rest = instruction.upper(), rest.strip()
    if instruction == "WORKDIR":
        made.workdir(rest, number)
    elif instruction == "ENV":
        for pair in rest.split():
            name, _, value = pair.partition("=")
            made.env[name] = value.strip('"')
    elif instruction in ("USER", "SHELL", "LABEL", "EXPOSE", "CMD", "ENTRYPOINT", "ARG"):
        pass  # nothing a build's files depend on; the fake's sandboxes have one user
    elif instruction == "COPY":
        words = [w for w in rest.split() if not w.startswith("--")]
        for source in words[:-1]:
            made.copy(context, source, words[-1], number)
    elif instruction == "RUN":
        made.run(rest, number)
    elif instruction == "FROM":
        # Modal builds several stages; this stand-in keeps one sandbox per build and does not.
        raise StepFailed("several build stages are not served by this stand-in", number)
    else:
        raise StepFailed(f"{instruction} is not served by this stand-in", number)
