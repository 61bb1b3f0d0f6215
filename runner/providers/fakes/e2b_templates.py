"""E2B's template builds, as the loopback E2B fake serves them (fakes/e2b.py), for the SDK's
`Template.build` (e2b/template_sync/build_api.py; spec/openapi.yml):

- `POST /v3/templates {name, cpuCount, memoryMB}` answers 202 with a template id and a build id
  (a name already built keeps its template id; each build gets a new build id);
- `GET /templates/{id}/files/{hash}` answers whether E2B holds the files of a COPY step
  (`present`) and, if not, a presigned `url` the SDK PUTs their tar.gz to, with no API key (the
  URL carries its own token, as S3's do);
- `POST /v2/templates/{id}/builds/{build}` starts the build from `fromTemplate` (a template of
  the account) or `fromImage`, with its steps (WORKDIR, ENV, USER, COPY, RUN): 202, then the
  build runs in the background;
- `GET /templates/{id}/builds/{build}/status?logsOffset=N` answers `waiting`, `building`, then
  `ready`, or `error` with a `reason` naming the step that failed and its last log lines.

The fake builds as E2B does, on a sandbox of its base, step by step, RUN with bash as E2B runs
commands. What a loopback stand-in cannot do, it answers as a failed build in E2B's own shape:
an image base (`fromImage`) must be pulled from a registry, which the fake has none of; and what
it keeps of a build is what its sandboxes can hold (the local provider's snapshot of /app and
/tmp: runner/providers/local/snapshots.py), so a RUN writing elsewhere fails as a RUN does.
"""

from __future__ import annotations

import re
import secrets
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from runner.providers.base import ProviderError
from runner.providers.fakes.builds import FakeBuild, StepFailed
from runner.providers.fakes.server import Request, Response

BUILD_PATH = re.compile(r"^/v2/templates/([^/]+)/builds/([^/]+)$")
STATUS_PATH = re.compile(r"^/templates/([^/]+)/builds/([^/]+)/status$")
FILES_PATH = re.compile(r"^/templates/([^/]+)/files/([0-9a-f]{64})$")
ALIAS_PATH = re.compile(r"^/templates/aliases/([^/]+)$")
UPLOAD_PREFIX = "/fake-storage/"
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
LOG_PAGE = 100  # the status endpoint's most entries per answer


def error(status: int, message: str) -> Response:
    return Response.json(status, {"code": status, "message": message})


@dataclass
class Build:
    template_id: str
    build_id: str
    name: str
    cpus: int
    memory_mib: int
    status: str = "waiting"  # waiting | building | ready | error
    entries: list[dict] = field(default_factory=list)
    reason: dict | None = None
    local: str = ""  # the local provider's snapshot holding the built files

    def identifiers(self) -> set[str]:
        return {self.template_id, self.name}

    def log(self, message: str, level: str = "info", step: str | None = None) -> None:
        entry = {"timestamp": datetime.now(UTC).isoformat(), "level": level, "message": message}
        if step is not None:
            entry["step"] = step
        self.entries.append(entry)


class TemplateBuilds:
    """The template builds of one E2B fake; `template(id or name)` finds a ready one."""

    def __init__(self, fake):
        self.fake = fake
        self.builds: dict[str, Build] = {}  # by build id
        self.files: dict[str, bytes] = {}  # uploaded COPY contexts, by files hash
        self.upload_token = secrets.token_hex(16)
        self._lock = threading.Lock()

    # -- routing ---------------------------------------------------------------------------------

    def handle_upload(self, request: Request) -> Response | None:
        """A PUT to a presigned URL (no API key: the token in the URL is its credential)."""
        if not request.path.startswith(UPLOAD_PREFIX):
            return None
        digest = request.path.removeprefix(UPLOAD_PREFIX)
        if request.method != "PUT" or request.arg("token") != self.upload_token:
            return Response(403, b"<Error><Code>AccessDenied</Code></Error>")
        with self._lock:
            self.files[digest] = request.body
        return Response(200)

    def handle(self, request: Request) -> Response | None:
        """The template routes of the API (after its key check), or None for another route."""
        if request.method == "POST" and request.path == "/v3/templates":
            return self.request_build(request)
        if request.method == "GET" and (match := FILES_PATH.match(request.path)):
            return self.file_link(match.group(1), match.group(2))
        if request.method == "POST" and (match := BUILD_PATH.match(request.path)):
            return self.start(request, match.group(1), match.group(2))
        if request.method == "GET" and (match := STATUS_PATH.match(request.path)):
            return self.status(request, match.group(1), match.group(2))
        if request.method == "GET" and (match := ALIAS_PATH.match(request.path)):
            ready = self.template(match.group(1))
            if ready is None:
                return error(404, f"template '{match.group(1)}' not found")
            return Response.json(200, {"templateID": ready.template_id, "public": False})
        return None

    def template(self, name: str) -> Build | None:
        """The latest ready build of the template with this id or name."""
        with self._lock:
            ready = [
                b for b in self.builds.values() if b.status == "ready" and name in b.identifiers()
            ]
        return ready[-1] if ready else None

    # -- the API ---------------------------------------------------------------------------------

    def request_build(self, request: Request) -> Response:
        body = request.json()
        if not isinstance(body, dict) or not isinstance(body.get("name"), str):
            return error(400, "request body must be a TemplateBuildRequestV3 with a name")
        name = body["name"].strip().lower().partition(":")[0]
        cpus, memory = body.get("cpuCount", 2), body.get("memoryMB", 1024)
        if not NAME.match(name):
            return error(400, f"Invalid template name: {body['name']}")
        if not isinstance(cpus, int) or not 1 <= cpus <= 8:
            return error(400, "cpuCount must be between 1 and 8")
        if not isinstance(memory, int) or memory < 128 or memory % 2:
            return error(400, "memoryMB must be at least 128 and even")
        with self._lock:
            earlier = next((b for b in self.builds.values() if b.name == name), None)
            template_id = earlier.template_id if earlier else new_template_id()
            made = Build(template_id, str(uuid.uuid4()), name, cpus, memory)
            self.builds[made.build_id] = made
        answer = {
            "templateID": template_id,
            "buildID": made.build_id,
            "public": False,
            "names": [name],
            "tags": ["default"],
            "aliases": [name],
        }
        return Response.json(202, answer)

    def file_link(self, template_id: str, digest: str) -> Response:
        if not self._known(template_id):
            return error(404, f"template '{template_id}' not found")
        with self._lock:
            present = digest in self.files
        answer: dict = {"present": present}
        if not present:
            answer["url"] = f"{self.fake.api.url}{UPLOAD_PREFIX}{digest}?token={self.upload_token}"
        return Response.json(201, answer)

    def start(self, request: Request, template_id: str, build_id: str) -> Response:
        with self._lock:
            made = self.builds.get(build_id)
        if made is None or made.template_id != template_id:
            return error(404, f"build '{build_id}' of template '{template_id}' not found")
        body = request.json()
        if not isinstance(body, dict) or not isinstance(body.get("steps", []), list):
            return error(400, "request body must be a TemplateBuildStartV2")
        if made.status != "waiting":
            return error(409, f"build '{build_id}' has already started")
        made.status = "building"
        self.fake.backend.in_background(self._build, made, body)
        return Response(202)

    def status(self, request: Request, template_id: str, build_id: str) -> Response:
        with self._lock:
            made = self.builds.get(build_id)
        if made is None or made.template_id != template_id:
            return error(404, f"build '{build_id}' of template '{template_id}' not found")
        offset = int(request.arg("logsOffset") or 0)
        entries = made.entries[offset : offset + LOG_PAGE]
        answer: dict = {
            "templateID": template_id,
            "buildID": build_id,
            "status": made.status,
            "logs": [e["message"] for e in entries],
            "logEntries": entries,
        }
        if made.reason is not None:
            answer["reason"] = made.reason
        return Response.json(200, answer)

    # -- the build -------------------------------------------------------------------------------

    def _build(self, made: Build, body: dict) -> None:
        build = None
        try:
            base = self._base(body)
            local = self.fake.backend.local
            build = FakeBuild(local, base.local or None, made.cpus, made.memory_mib, made.name)
            for number, step in enumerate(body.get("steps", []), start=1):
                self._step(made, build, step, str(number))
            made.local = build.finish()
            made.log("Build finished")
            made.status = "ready"
        except StepFailed as exc:
            made.reason = {"message": str(exc), "step": exc.step, "logEntries": made.entries[-5:]}
            made.log(str(exc), "error", exc.step)
            made.status = "error"
        except ProviderError as exc:
            made.reason = {"message": f"build failed: {exc}"}
            made.status = "error"
        finally:
            if build is not None:
                build.close()

    def _base(self, body: dict) -> Build:
        """What the build starts from: the account's standard template (no snapshot: a fresh
        sandbox) or another ready build of it; never an image, which needs a registry."""
        if body.get("fromImage"):
            raise StepFailed(
                f"failed to pull image {body['fromImage']}: this stand-in reaches no registry",
                "base",
            )
        name = str(body.get("fromTemplate") or "")
        if name in self.fake.templates:
            return Build("", "", name, 0, 0)
        found = self.template(name)
        if found is None:
            raise StepFailed(f"base template '{name}' not found", "base")
        return found

    def _step(self, made: Build, build: FakeBuild, step: dict, number: str) -> None:
        kind, args = str(step.get("type", "")).upper(), [str(a) for a in step.get("args") or []]
        made.log(f"[{number}] {kind} {' '.join(args)}", step=number)
        if kind == "WORKDIR" and args:
            build.workdir(args[0], number)
        elif kind == "ENV":
            build.env.update(dict(zip(args[::2], args[1::2], strict=False)))
        elif kind == "USER":
            pass  # the stand-in's sandboxes have one user; E2B switches the build's user here
        elif kind == "COPY" and len(args) >= 2:
            with self._lock:
                data = self.files.get(str(step.get("filesHash", "")))
            if data is None:
                raise StepFailed(f"files of COPY {args[0]} were never uploaded", number)
            build.copy(data, args[0], args[1], number)
        elif kind == "RUN" and args:
            build.run(args[0], number)
        else:
            raise StepFailed(f"unsupported step {kind} {args}", number)

    def _known(self, template_id: str) -> bool:
        with self._lock:
            return any(b.template_id == template_id for b in self.builds.values())


def new_template_id() -> str:
    """A new template id, as E2B makes them: 20 lowercase letters and digits."""
    return "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(20))
