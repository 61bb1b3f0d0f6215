"""A loopback fake of Modal's gRPC API, served so that the real `modal` client (1.6.4) runs as is.

Modal has no HTTP API: the client speaks gRPC (grpclib, HTTP/2) to the control plane named by
MODAL_SERVER_URL and, for commands, to a second service on the worker, the task command router,
whose address and JWT come from `SandboxGetCommandRouterAccess`. Both services are served here,
on one 127.0.0.1 port, from the service base classes shipped in the wheel (`modal_proto`). The
client accepts a plain-HTTP router only when its control plane is on localhost, and reads the
router JWT's `exp` claim without verifying it, so no TLS or signing key is needed.

RPCs served, the ones the adapter's path calls (client 1.6.4, V2 sandboxes, the client default):
ClientHello, AuthTokenGet, EnvironmentGetOrCreate, AppGetOrCreate, ImageGetOrCreate (and a
Dockerfile build's mount and join RPCs: fakes/modal_images.py);
SandboxCreateV2 (answers at once, before the sandbox runs: no task id yet); SandboxGetTaskIdV2
(empty until the sandbox is scheduled, `create_delay_s` later); SandboxGetCommandRouterAccess;
SandboxWaitV2 (long poll; TIMEOUT once the sandbox's `timeout_secs` passed, TERMINATED after
terminate); SandboxListV2 (sandboxes having at least the given tags, running ones unless
`include_finished`); SandboxTagsGetV2/SetV2; SandboxTerminateV2; ImageFromId and ImageDelete
(modal.experimental's image_delete); and on the router TaskExecStart, TaskExecStdinWrite,
TaskExecStdioRead, TaskExecWait, TaskExecPoll, TaskSnapshotFilesystem. Anything else answers
UNIMPLEMENTED with its name.

Snapshots (`Sandbox.snapshot_filesystem`): TaskSnapshotFilesystem makes an image of the sandbox's
files (the local provider's snapshot, a tar of /app and /tmp: no memory, as Modal's) and answers
its id; a request repeated with the same `snapshot_id` answers the same image. SandboxCreateV2
accepts that id as its image; ImageFromId answers NOT_FOUND once ImageDelete removed it (or its
`ttl_seconds` passed); ImageDelete deletes any image it knows, the standard one too, as Modal's
would.

Every control-plane call needs the token metadata (`x-modal-token-id`, `x-modal-token-secret`;
UNAUTHENTICATED without), every router call the JWT issued for its sandbox. An unknown or expired
sandbox answers NOT_FOUND; the plan limit answers RESOURCE_EXHAUSTED (`documented_limits()`, which
demo runs enforce: Modal publishes no number, but answers creates past 5 a second with "Sandbox
creation rate limit (5/s) exceeded", as users report); faults (`RpcFaults`) make
the next calls of an RPC answer a chosen status (UNAVAILABLE, DEADLINE_EXCEEDED...) or wait first.

boxbench's assumptions where the client's source does not say: a command killed at its
`timeout_secs` reports signal 9; stdin is fed to the command once it is closed (the backend's
model, runner.providers.fakes.backend); output is streamed once the command has ended.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import empty_pb2
from grpclib import GRPCError, Status
from grpclib.server import Server, Stream
from modal_proto import api_pb2
from modal_proto import task_command_router_pb2 as sr_pb2
from modal_proto.api_grpc import ModalClientBase
from modal_proto.task_command_router_grpc import TaskCommandRouterBase

from runner.providers.base import ProviderError
from runner.providers.fakes import hostile
from runner.providers.fakes.backend import Backend, Box, Busy, CreateWindow
from runner.providers.fakes.modal_images import ImageBuildRpcs, ImageBuilds, start_build

GENERIC = api_pb2.GenericResult
STDIO_CHUNK = 64 * 1024
LONG_POLL_CAP_S = 10.0  # SandboxWait's long poll never holds a call longer than this
IMAGE_BUILDER_VERSION = "2026.10"  # the newest the 1.6.4 client knows
# Hostile answers (fakes/hostile.py's, and two of snapshots: the standard image's id, none).
HOSTILE_MODES = (
    "endless_listing",
    "missing_id",
    "oversized_download",
    "standard_snapshot",
    "empty_snapshot",
)


@dataclass
class RpcFault:
    method: str
    times: int
    status: Status | None
    message: str
    delay_s: float


class RpcFaults:
    """Planted failures: the next `times` calls of `method` answer `status` (after `delay_s`)."""

    def __init__(self):
        self._items: list[RpcFault] = []
        self._lock = threading.Lock()

    def add(
        self,
        method: str,
        status: Status | None = None,
        *,
        times: int = 1,
        message: str = "injected fault",
        delay_s: float = 0.0,
    ) -> None:
        with self._lock:
            self._items.append(RpcFault(method, times, status, message, delay_s))

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def take(self, method: str) -> RpcFault | None:
        with self._lock:
            for fault in self._items:
                if fault.method == method:
                    fault.times -= 1
                    if fault.times <= 0:
                        self._items.remove(fault)
                    return fault
        return None


def _jwt(sandbox_id: str, lifetime_s: float) -> str:
    """An unsigned JWT with the claims the client reads (it never verifies the signature)."""

    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    claims = {"sub": sandbox_id, "exp": int(time.time() + lifetime_s)}
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.{secrets.token_hex(8)}"


class _Unimplemented:
    """Mixin: RPCs this fake does not serve answer UNIMPLEMENTED, naming themselves."""

    served: frozenset[str] = frozenset()

    def __mapping__(self):
        mapping = super().__mapping__()
        for path, handler in list(mapping.items()):
            name = path.rsplit("/", 1)[1]
            if name not in self.served:
                mapping[path] = handler._replace(func=_refuse(name))
        return mapping


def _refuse(name: str):
    async def refuse(stream: Stream) -> None:
        raise GRPCError(Status.UNIMPLEMENTED, f"the boxbench fake does not serve {name}")

    return refuse


class ControlPlane(ImageBuildRpcs, _Unimplemented, ModalClientBase):
    served = frozenset(
        {
            "ClientHello",
            "AuthTokenGet",
            "EnvironmentGetOrCreate",
            "AppGetOrCreate",
            "ImageGetOrCreate",
            *ImageBuildRpcs.served,
            "SandboxCreateV2",
            "SandboxGetTaskIdV2",
            "SandboxGetCommandRouterAccess",
            "SandboxWaitV2",
            "SandboxListV2",
            "SandboxTagsGetV2",
            "SandboxTagsSetV2",
            "SandboxTerminateV2",
            "ImageFromId",
            "ImageDelete",
        }
    )

    def __init__(self, fake: ModalFake):
        self.fake = fake

    async def _begin(self, stream: Stream, method: str):
        await self.fake.before(method, stream)
        headers: dict = dict(stream.metadata or {})
        if (
            headers.get("x-modal-token-id") != self.fake.token_id
            or headers.get("x-modal-token-secret") != self.fake.token_secret
        ):
            raise GRPCError(Status.UNAUTHENTICATED, "Token missing or invalid")
        return await stream.recv_message()

    def _box(self, sandbox_id: str) -> Box:
        box = self.fake.find(sandbox_id)
        if box is None:
            raise GRPCError(Status.NOT_FOUND, f"Sandbox {sandbox_id} not found")
        return box

    async def ClientHello(self, stream):  # noqa: N802 - gRPC method names
        await self._begin(stream, "ClientHello")
        await stream.send_message(api_pb2.ClientHelloResponse())

    async def AuthTokenGet(self, stream):  # noqa: N802
        await self._begin(stream, "AuthTokenGet")
        await stream.send_message(api_pb2.AuthTokenGetResponse(token=_jwt("client", 3600)))

    async def EnvironmentGetOrCreate(self, stream):  # noqa: N802
        await self._begin(stream, "EnvironmentGetOrCreate")
        settings = api_pb2.EnvironmentSettings(image_builder_version=IMAGE_BUILDER_VERSION)
        await stream.send_message(
            api_pb2.EnvironmentGetOrCreateResponse(
                environment_id="en-boxbenchfake",
                metadata=api_pb2.EnvironmentMetadata(name="main", settings=settings),
            )
        )

    async def AppGetOrCreate(self, stream):  # noqa: N802
        request = await self._begin(stream, "AppGetOrCreate")
        app_id = self.fake.apps.setdefault(request.app_name, f"ap-{secrets.token_hex(11)}")
        await stream.send_message(api_pb2.AppGetOrCreateResponse(app_id=app_id))

    async def ImageGetOrCreate(self, stream):  # noqa: N802
        request = await self._begin(stream, "ImageGetOrCreate")
        key = request.image.SerializeToString(deterministic=True)
        image_id = self.fake.images.setdefault(key, f"im-{secrets.token_hex(11)}")
        # A Dockerfile layer is built first: no result until ImageJoinStreaming has one.
        building = start_build(self.fake, image_id, request.image)
        result = GENERIC(status=0 if building else GENERIC.GENERIC_STATUS_SUCCESS)
        await stream.send_message(
            api_pb2.ImageGetOrCreateResponse(
                image_id=image_id, result=result, metadata=api_pb2.ImageMetadata()
            )
        )

    async def SandboxCreateV2(self, stream):  # noqa: N802
        request = await self._begin(stream, "SandboxCreateV2")
        definition = request.definition
        if request.app_id not in self.fake.apps.values():
            raise GRPCError(Status.NOT_FOUND, f"App {request.app_id} not found")
        if not self.fake.has_image(definition.image_id):
            raise GRPCError(Status.NOT_FOUND, f"Image {definition.image_id} not found")
        timeout = definition.timeout_secs or 300
        if timeout > 24 * 3600:
            raise GRPCError(Status.INVALID_ARGUMENT, "timeout must be at most 24 hours")
        try:
            self.fake.backend.admit()
        except Busy as exc:
            raise GRPCError(Status.RESOURCE_EXHAUSTED, str(exc)) from None
        resources = definition.resources
        box = self.fake.backend.reserve(
            timeout,
            # Modal's unit is a physical core, two vCPU: half a core is one vCPU.
            cpus=max(1, round(resources.milli_cpu * 2 / 1000)),
            memory_mib=resources.memory_mb or 128,
        )
        tags = {t.tag_name: t.tag_value for t in request.tags}
        # `block_network=True` reaches the server as network access BLOCKED; an allowlist is
        # served as open (the local sandbox has the network or has none).
        blocked = api_pb2.NetworkAccess.NetworkAccessType.BLOCKED
        network = definition.network_access.network_access_type != blocked
        box.extra.update(
            app_id=request.app_id,
            tags=tags,
            timeout=timeout,
            task_id="",
            jwt=_jwt(box.id, 3600),
            result=None,
            commands={},
            milli_cpu=resources.milli_cpu,
            memory_mb=resources.memory_mb,
            network=network,
        )
        self.fake.records[box.id] = box
        snapshot = self.fake.snapshots.get(definition.image_id)
        files = snapshot.local if snapshot is not None else None
        self.fake.backend.in_background(self.fake.provision, box, network, files)
        sandbox_id = box.id
        if "missing_id" in self.fake.planted:
            self.fake.planted.discard("missing_id")
            sandbox_id = ""  # protobuf's default: a field left out reads as empty
        await stream.send_message(
            api_pb2.SandboxCreateV2Response(
                sandbox_id=sandbox_id,
                metadata=api_pb2.SandboxHandleMetadata(app_id=request.app_id),
            )
        )

    async def SandboxGetTaskIdV2(self, stream):  # noqa: N802
        request = await self._begin(stream, "SandboxGetTaskIdV2")
        box = self._box(request.sandbox_id)
        result = self.fake.result(box)
        if result is not None:
            await stream.send_message(api_pb2.SandboxGetTaskIdResponse(task_result=result))
            return
        await stream.send_message(api_pb2.SandboxGetTaskIdResponse(task_id=box.extra["task_id"]))

    async def SandboxGetCommandRouterAccess(self, stream):  # noqa: N802
        request = await self._begin(stream, "SandboxGetCommandRouterAccess")
        box = self._box(request.sandbox_id) if request.sandbox_id else None
        if box is None:
            box = self.fake.by_task(request.task_id)
        if box is None or not box.extra["task_id"]:
            raise GRPCError(Status.FAILED_PRECONDITION, "Sandbox is not running")
        await stream.send_message(
            api_pb2.SandboxGetCommandRouterAccessResponse(jwt=box.extra["jwt"], url=self.fake.url)
        )

    async def SandboxWaitV2(self, stream):  # noqa: N802
        request = await self._begin(stream, "SandboxWaitV2")
        box = self._box(request.sandbox_id)
        deadline = time.monotonic() + min(max(request.timeout, 0.0), LONG_POLL_CAP_S)
        while (result := self.fake.result(box)) is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        response = api_pb2.SandboxWaitResponse(
            metadata=api_pb2.SandboxHandleMetadata(app_id=box.extra["app_id"])
        )
        if result is not None:
            response.result.CopyFrom(result)
        await stream.send_message(response)

    async def SandboxListV2(self, stream):  # noqa: N802
        request = await self._begin(stream, "SandboxListV2")
        if "endless_listing" in self.fake.planted and self.fake.hostile_pages < hostile.PAGES:
            # A fresh page each time, all made at one instant: the client's `before` never
            # moves on, and the listing goes on for PAGES pages.
            self.fake.hostile_pages += 1
            page = [
                api_pb2.SandboxInfo(id=f"sb-hostile-{uuid.uuid4().hex[:12]}", created_at=1.0)
                for _ in range(100)
            ]
            await stream.send_message(api_pb2.SandboxListResponse(sandboxes=page))
            return
        wanted = {t.tag_name: t.tag_value for t in request.tags}
        before = request.before_timestamp or float("inf")
        found = []
        for box in sorted(self.fake.records.values(), key=lambda b: b.created_at, reverse=True):
            created = box.created_at.timestamp()
            finished = self.fake.result(box) is not None
            if (
                created >= before
                or (finished and not request.include_finished)
                or (request.app_id and box.extra["app_id"] != request.app_id)
                or any(box.extra["tags"].get(k) != v for k, v in wanted.items())
            ):
                continue
            found.append(
                api_pb2.SandboxInfo(
                    id=box.id,
                    created_at=created,
                    app_id=box.extra["app_id"],
                    tags=[
                        api_pb2.SandboxTag(tag_name=k, tag_value=v)
                        for k, v in box.extra["tags"].items()
                    ],
                    timeout_secs=box.extra["timeout"],
                    task_info=api_pb2.TaskInfo(id=box.extra["task_id"], sandbox_id=box.id),
                )
            )
            if len(found) == 100:  # the service's page size; the client asks again, older
                break
        await stream.send_message(api_pb2.SandboxListResponse(sandboxes=found))

    async def SandboxTagsGetV2(self, stream):  # noqa: N802
        request = await self._begin(stream, "SandboxTagsGetV2")
        hostile_id = request.sandbox_id.startswith("sb-hostile-")
        tags = {} if hostile_id else self._box(request.sandbox_id).extra["tags"]
        await stream.send_message(
            api_pb2.SandboxTagsGetResponse(
                tags=[api_pb2.SandboxTag(tag_name=k, tag_value=v) for k, v in tags.items()]
            )
        )

    async def SandboxTagsSetV2(self, stream):  # noqa: N802
        request = await self._begin(stream, "SandboxTagsSetV2")
        box = self._box(request.sandbox_id)
        box.extra["tags"] = {t.tag_name: t.tag_value for t in request.tags}
        await stream.send_message(empty_pb2.Empty())

    async def SandboxTerminateV2(self, stream):  # noqa: N802
        request = await self._begin(stream, "SandboxTerminateV2")
        box = self._box(request.sandbox_id)
        existing = self.fake.result(box)
        if existing is None:
            box.extra["result"] = GENERIC(
                status=GENERIC.GENERIC_STATUS_TERMINATED, exception="Sandbox terminated"
            )
            await asyncio.to_thread(self.fake.backend.stop, box)
        response = api_pb2.SandboxTerminateResponse()
        if existing is not None:
            response.existing_result.CopyFrom(existing)
        await stream.send_message(response)

    async def ImageFromId(self, stream):  # noqa: N802
        request = await self._begin(stream, "ImageFromId")
        if not self.fake.has_image(request.image_id):
            raise GRPCError(Status.NOT_FOUND, f"Image {request.image_id} not found")
        await stream.send_message(
            api_pb2.ImageFromIdResponse(image_id=request.image_id, metadata=api_pb2.ImageMetadata())
        )

    async def ImageDelete(self, stream):  # noqa: N802
        request = await self._begin(stream, "ImageDelete")
        if not self.fake.has_image(request.image_id):
            raise GRPCError(Status.NOT_FOUND, f"Image {request.image_id} not found")
        await asyncio.to_thread(self.fake.delete_image, request.image_id)
        await stream.send_message(empty_pb2.Empty())


class CommandRouter(_Unimplemented, TaskCommandRouterBase):
    served = frozenset(
        {
            "TaskExecStart",
            "TaskExecStdinWrite",
            "TaskExecStdioRead",
            "TaskExecWait",
            "TaskExecPoll",
            "TaskSnapshotFilesystem",
        }
    )

    def __init__(self, fake: ModalFake):
        self.fake = fake

    async def _begin(self, stream: Stream, method: str):
        await self.fake.before(method, stream)
        request = await stream.recv_message()
        if request is None:
            raise GRPCError(Status.INVALID_ARGUMENT, "the stream ended before its request")
        box = self.fake.by_task(request.task_id)
        if box is None or self.fake.result(box) is not None:
            raise GRPCError(Status.NOT_FOUND, f"Task {request.task_id} not found")
        if dict(stream.metadata or {}).get("authorization") != f"Bearer {box.extra['jwt']}":
            raise GRPCError(Status.UNAUTHENTICATED, "invalid or missing JWT")
        return request, box

    def _process(self, box: Box, exec_id: str):
        try:
            return box.extra["commands"][exec_id]
        except KeyError:
            raise GRPCError(Status.NOT_FOUND, f"Exec {exec_id} not found") from None

    async def TaskExecStart(self, stream):  # noqa: N802
        request, box = await self._begin(stream, "TaskExecStart")
        if request.exec_id in box.extra["commands"]:
            await stream.send_message(sr_pb2.TaskExecStartResponse())  # idempotent retry
            return
        # Modal sets MODAL_REGION in every container: the region the sandbox was placed in.
        env = {"MODAL_REGION": self.fake.region}
        for source in request.secret_sources:
            env.update(source.env.contents)
        process = self.fake.backend.spawn(
            box,
            list(request.command_args),
            env=env or None,
            workdir=request.workdir or None,
            stdin=True,
            timeout_s=request.timeout_secs or 24 * 3600,
        )
        box.extra["commands"][request.exec_id] = process
        await stream.send_message(sr_pb2.TaskExecStartResponse())

    async def TaskExecStdinWrite(self, stream):  # noqa: N802
        request, box = await self._begin(stream, "TaskExecStdinWrite")
        process = self._process(box, request.exec_id)
        if request.offset == len(process.stdin):  # a retried write is not applied twice
            process.stdin += request.data
        if request.eof:
            process.stdin_closed.set()
        await stream.send_message(sr_pb2.TaskExecStdinWriteResponse())

    async def TaskExecStdioRead(self, stream):  # noqa: N802
        request, box = await self._begin(stream, "TaskExecStdioRead")
        process = self._process(box, request.exec_id)
        await asyncio.to_thread(process.done.wait)
        result = process.result
        data = b""
        stdout = request.file_descriptor == sr_pb2.TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT
        if result is not None:
            data = result.stdout if stdout else result.stderr
        if stdout and "oversized_download" in self.fake.planted:
            self.fake.planted.discard("oversized_download")
            for chunk in hostile.oversized_body():
                await stream.send_message(sr_pb2.TaskExecStdioReadResponse(data=chunk))
            return
        for at in range(request.offset, len(data), STDIO_CHUNK):
            await stream.send_message(
                sr_pb2.TaskExecStdioReadResponse(data=data[at : at + STDIO_CHUNK])
            )

    async def TaskSnapshotFilesystem(self, stream):  # noqa: N802
        request, box = await self._begin(stream, "TaskSnapshotFilesystem")
        if not request.snapshot_id or (request.ttl_seconds <= 0 and request.ttl_seconds != -1):
            raise GRPCError(Status.INVALID_ARGUMENT, "snapshot_id and a positive ttl are required")
        image_id = await asyncio.to_thread(self.fake.snapshot, box, request)
        await stream.send_message(sr_pb2.TaskSnapshotFilesystemResponse(image_id=image_id))

    def _exit(self, process, response_type):
        if process.result is not None and not process.killed:
            return response_type(code=process.result.exit_code)
        return response_type(signal=9)  # killed: at its timeout, or with its sandbox

    async def TaskExecWait(self, stream):  # noqa: N802
        request, box = await self._begin(stream, "TaskExecWait")
        process = self._process(box, request.exec_id)
        while not await asyncio.to_thread(process.done.wait, 1.0):
            if self.fake.result(box) is not None:
                raise GRPCError(Status.NOT_FOUND, f"Task {request.task_id} not found")
        await stream.send_message(self._exit(process, sr_pb2.TaskExecWaitResponse))

    async def TaskExecPoll(self, stream):  # noqa: N802
        request, box = await self._begin(stream, "TaskExecPoll")
        process = self._process(box, request.exec_id)
        if not process.done.is_set():
            await stream.send_message(sr_pb2.TaskExecPollResponse())
            return
        await stream.send_message(self._exit(process, sr_pb2.TaskExecPollResponse))


@dataclass
class SnapshotImage:
    """An image made of a sandbox's files: the local provider's snapshot behind it."""

    local: str
    source: str
    request: str  # the client's snapshot_id: a repeated request answers the same image
    expires_at: float  # epoch seconds; inf for no expiry


class ModalFake:
    @staticmethod
    def documented_limits() -> dict:
        """No concurrency cap is known; creates past 5 a second are refused."""
        return {"max_concurrent": None, "create_window": CreateWindow(5, 1.0)}

    def __init__(
        self,
        root: str | Path,
        *,
        create_delay_s: float = 0.2,
        max_concurrent: int | None = 20,
        create_rate_per_s: float | None = None,
        create_window: CreateWindow | None = None,
    ):
        self.token_id = "ak-" + secrets.token_hex(10)
        self.token_secret = "as-" + secrets.token_hex(16)
        self.root = Path(root)
        self.backend = Backend(
            root,
            max_concurrent=max_concurrent,
            create_rate_per_s=create_rate_per_s,
            create_window=create_window,
            prefix="sb-",
        )
        self.create_delay_s = create_delay_s
        self.region = "us-east-1"  # where its containers say they run (MODAL_REGION)
        self.fail_next_create = False
        self.faults = RpcFaults()
        self.planted: set[str] = set()  # hostile modes in effect (fakes/hostile.py)
        self.hostile_pages = 0
        self.calls: list[tuple[str, float]] = []  # (RPC name, monotonic arrival), for assertions
        self.peers: list[tuple[str, int | None]] = []  # (RPC name, client port): connection reuse
        self.apps: dict[str, str] = {}
        self.images: dict[bytes, str] = {}
        self.snapshots: dict[str, SnapshotImage] = {}  # image id: a sandbox's snapshot
        self.image_builds = ImageBuilds()  # Dockerfile builds (fakes/modal_images.py)
        self.deleted_images: list[str] = []  # every ImageDelete that removed an image
        self._images_lock = threading.Lock()
        self.records: dict[str, Box] = {}  # every sandbox made: finished ones stay listable
        self._tasks: dict[str, Box] = {}
        self._loop = asyncio.new_event_loop()
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def api_key(self) -> str:  # the name the shared credential tests plant a key under
        return self.token_secret

    @api_key.setter
    def api_key(self, value: str) -> None:
        self.token_secret = value

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ModalFake:
        started = threading.Event()

        def serve():
            asyncio.set_event_loop(self._loop)
            # grpclib's Server binds the running thread's loop when it is made, so it is made here.
            self._server = Server([ControlPlane(self), CommandRouter(self)])
            self._loop.run_until_complete(self._server.start("127.0.0.1", 0))
            self.port = self._server._server.sockets[0].getsockname()[1]
            started.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

        self._thread = threading.Thread(target=serve, name="fake-modal", daemon=True)
        self._thread.start()
        if not started.wait(30):
            raise RuntimeError("the Modal fake's gRPC server did not start within 30 s")
        return self

    def stop(self) -> None:
        async def close():
            self._server.close()
            await self._server.wait_closed()
            # Handlers still waiting (a command's stream, say) end here, not when the loop is
            # collected later, in another test, as "Task was destroyed but it is pending".
            pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

        if self.port:
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(30)
        self.backend.close()

    def adapter_settings(self) -> dict:
        return {
            "server_url": self.url,
            "token_id": self.token_id,
            "token_secret": self.token_secret,
            "ledger_dir": str(self.root / "ledgers"),
        }

    def hostile(self, mode: str) -> None:
        """Answer as a broken or hostile Modal would (fakes/hostile.py). Modal answers in
        protobuf, so there is no body that is not JSON to send; downloads are commands."""
        if mode == hostile.CALM:
            self.planted.clear()
            self.faults.clear()
            self.hostile_pages = 0
        elif mode in HOSTILE_MODES:
            self.planted.add(mode)
        else:
            raise hostile.unknown(mode, "modal")

    # -- state shared by both services -----------------------------------------------------------

    async def before(self, method: str, stream: Stream) -> None:
        peer = stream.peer.addr() if stream.peer is not None else None
        self.calls.append((method, time.monotonic()))
        self.peers.append((method, peer[1] if peer else None))
        fault = self.faults.take(method)
        if fault is None:
            return
        if fault.delay_s:
            await asyncio.sleep(fault.delay_s)
        if fault.status is not None:
            raise GRPCError(fault.status, fault.message)

    def provision(self, box: Box, network: bool, files: str | None = None) -> None:
        """Schedule the sandbox `create_delay_s` after create: only then does it get a task id."""
        if not self.backend.sleep_unless_closed(self.create_delay_s):
            return  # the fake stopped first
        if box.extra.get("result") is not None:
            return  # terminated before it was scheduled: it never runs
        failure, self.fail_next_create = self.fail_next_create, False
        if failure:
            box.state = "failed"
            box.extra["result"] = GENERIC(
                status=GENERIC.GENERIC_STATUS_FAILURE, exception="Sandbox failed to start"
            )
            return
        try:
            self.backend.start(box, network, files)
        except ProviderError as exc:
            box.extra["result"] = GENERIC(
                status=GENERIC.GENERIC_STATUS_FAILURE, exception=f"Sandbox failed to start: {exc}"
            )
            return
        # A V2 task id: `ta-` and the kind marker `V` at the end, as the client tells them apart.
        task_id = f"ta-{secrets.token_hex(11)}V"
        if box.extra.get("result") is not None:  # terminated while its sandbox was being made
            self.backend.stop(box)
            return
        self._tasks[task_id] = box
        box.extra["task_id"] = task_id

    def keep_built_image(self, image_id: str, local: str) -> None:
        """A Dockerfile build's files (fakes/modal_images.py): an image creates start from."""
        with self._images_lock:
            self.snapshots[image_id] = SnapshotImage(local, "build", image_id, float("inf"))

    def has_image(self, image_id: str) -> bool:
        with self._images_lock:
            snapshot = self.snapshots.get(image_id)
            if snapshot is not None and snapshot.expires_at <= time.time():
                self.snapshots.pop(image_id)
                self.backend.local.delete_snapshot(snapshot.local)
                snapshot = None
            return snapshot is not None or image_id in self.images.values()

    def snapshot(self, box: Box, request) -> str:
        """The image id of `box`'s files, made once per client snapshot_id."""
        if "standard_snapshot" in self.planted:  # hostile: the standard image's id
            self.planted.discard("standard_snapshot")
            return next(iter(self.images.values()))
        if "empty_snapshot" in self.planted:  # hostile: protobuf's default, no id at all
            self.planted.discard("empty_snapshot")
            return ""
        with self._images_lock:
            for image_id, made in self.snapshots.items():
                if made.request == request.snapshot_id:
                    return image_id
        if box.local is None:  # the router serves only a scheduled task
            raise GRPCError(Status.FAILED_PRECONDITION, "the sandbox is not running")
        try:
            local = self.backend.local.snapshot(box.local)
        except ProviderError as exc:
            raise GRPCError(Status.INTERNAL, f"snapshot failed: {exc}") from None
        ttl = request.ttl_seconds
        expires = time.time() + ttl if ttl > 0 else float("inf")
        image_id = f"im-{secrets.token_hex(11)}"
        with self._images_lock:
            self.snapshots[image_id] = SnapshotImage(local, box.id, request.snapshot_id, expires)
        return image_id

    def delete_image(self, image_id: str) -> None:
        with self._images_lock:
            snapshot = self.snapshots.pop(image_id, None)
            for key, known in list(self.images.items()):
                if known == image_id:
                    del self.images[key]
            self.deleted_images.append(image_id)
        if snapshot is not None:
            self.backend.local.delete_snapshot(snapshot.local)

    def find(self, sandbox_id: str) -> Box | None:
        self.backend.get(sandbox_id)  # retires it when past its timeout
        return self.records.get(sandbox_id)

    def by_task(self, task_id: str) -> Box | None:
        box = self._tasks.get(task_id)
        return self.find(box.id) if box is not None else None

    def result(self, box: Box) -> api_pb2.GenericResult | None:
        """The sandbox's final result, or None while it is scheduled or running."""
        if box.extra.get("result") is None and box.state == "expired":
            box.extra["result"] = GENERIC(
                status=GENERIC.GENERIC_STATUS_TIMEOUT, exception="Sandbox timed out"
            )
        return box.extra.get("result")


# The base classes declare every RPC abstract; the ones not served answer UNIMPLEMENTED through
# _Unimplemented.__mapping__, so the classes are complete as they stand.
ControlPlane.__abstractmethods__ = frozenset()
CommandRouter.__abstractmethods__ = frozenset()
