"""A loopback fake of Amazon Bedrock AgentCore's code-interpreter sessions (service
`bedrock-agentcore`, rest-json, Signature Version 4), for the agentcore adapter's tests and
demo mode. boto3 reaches it only through `endpoint_url`.

Every request is read and checked against the service model botocore ships (fakes/aws.py): an
operation the model does not have, a member it does not know, a missing required member, a
length, range, pattern or enum the model forbids answer the service's ValidationException (400).
The signature is recomputed with the fake's secret: another key answers 403
UnrecognizedClientException, another secret or region 403 InvalidSignatureException.

Served operations: StartCodeInterpreterSession (the session is READY when it answers; it ends
at `sessionTimeoutSeconds`, 900 by default, as the service documents), StopCodeInterpreterSession,
GetCodeInterpreterSession (TERMINATED once stopped or expired), ListCodeInterpreterSessions
(paged, newest first, by status) and InvokeCodeInterpreter, whose answer is an event stream of
`result` events. Its tools here: `executeCommand` (stdout, stderr and exitCode in
structuredContent), `writeFiles`, `readFiles` (a `resource` block per file, its bytes as `blob`)
and `removeFiles`; the other tools of the model's enum (code in a language runtime, background
tasks) answer a result with `isError` naming the tool, since no benchmark calls them. Any other
operation of the model answers 501 naming it. The only code interpreter is AWS's system one,
`aws.codeinterpreter.v1`; another identifier answers ResourceNotFoundException.

Commands run for real in a local bubblewrap sandbox per session (fakes/backend.py), through
`/bin/sh -c`, so the guest clock and the clock gate behave as on a real sandbox.
"""

from __future__ import annotations

import base64
import secrets
import threading
from datetime import UTC, datetime
from pathlib import Path

from runner.providers.base import ProviderError
from runner.providers.fakes import aws, hostile
from runner.providers.fakes.backend import Backend, Box, Busy
from runner.providers.fakes.server import FakeHTTPServer, Request, Response

SERVICE = "bedrock-agentcore"
INTERPRETER = "aws.codeinterpreter.v1"
DEFAULT_TIMEOUT_S = 900  # the service's default session timeout
MISSING = "No such file or directory"


class AgentCoreFake:
    def __init__(
        self,
        root: str | Path,
        *,
        max_concurrent: int = 20,
        create_rate_per_s: float | None = None,
        region: str = "us-east-1",
        idle_timeout_s: float = 300.0,
    ):
        self.access_key_id = "AKIA" + secrets.token_hex(8).upper()
        self.secret_access_key = secrets.token_urlsafe(30)
        self.region = region
        self.backend = Backend(
            root, max_concurrent=max_concurrent, create_rate_per_s=create_rate_per_s, prefix=""
        )
        self.operations = aws.Operations(SERVICE)
        self.sessions: dict[str, dict] = {}  # every session ever started: id -> record
        self._lock = threading.Lock()
        self.api = FakeHTTPServer(self.handle, idle_timeout_s, "agentcore")

    # The names the shared credential tests plant a key under.
    @property
    def api_key(self) -> str:
        return self.secret_access_key

    @api_key.setter
    def api_key(self, value: str) -> None:
        self.secret_access_key = value

    @property
    def token_id(self) -> str:
        return self.access_key_id

    @token_id.setter
    def token_id(self, value: str) -> None:
        self.access_key_id = value

    def start(self) -> AgentCoreFake:
        self.api.start()
        return self

    def stop(self) -> None:
        self.api.stop()
        self.backend.close()

    def adapter_settings(self) -> dict:
        return {
            "endpoint_url": self.api.url,
            "region": self.region,
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
        }

    def hostile(self, mode: str) -> None:
        """Answer as a broken or hostile AgentCore would (fakes/hostile.py)."""
        faults = self.api.faults
        if mode == hostile.CALM:
            faults.clear()
        elif mode == "endless_listing":
            faults.add(
                "POST",
                "/sessions/list$",
                times=hostile.PAGES,
                answer=lambda r: Response.json(
                    200, {"items": [], "nextToken": hostile.fresh_token()}
                ),
            )
        elif mode == "missing_id":
            body = {
                "codeInterpreterIdentifier": INTERPRETER,
                "createdAt": aws.timestamp(datetime.now(UTC)),
            }
            faults.add("PUT", "/sessions/start$", status=200, body=body)
        elif mode == "not_json":
            faults.add("PUT", "/sessions/start$", answer=lambda r: hostile.html())
        elif mode == "oversized_download":
            faults.add(
                "POST",
                "/tools/invoke$",
                answer=lambda r: Response(
                    200, _oversized_events(), {"Content-Type": "application/vnd.amazon.eventstream"}
                ),
            )
        else:
            raise hostile.unknown(mode, "agentcore")

    # -- routing ---------------------------------------------------------------------------------

    def handle(self, request: Request) -> Response:
        try:
            host = request.headers.get("host", "")
            aws.verify_sigv4(
                request, host, self.access_key_id, self.secret_access_key, self.region, SERVICE
            )
            call = self.operations.read(request)
            if call.params.get("codeInterpreterIdentifier") != INTERPRETER:
                raise aws.Rejected(
                    404,
                    "ResourceNotFoundException",
                    f"Code interpreter {call.params.get('codeInterpreterIdentifier')} not found",
                )
            handler = getattr(self, f"op_{call.operation}", None)
            if handler is None:
                raise aws.Rejected(
                    501, "NotImplemented", f"{call.operation} is not served by boxbench's fake"
                )
            return handler(call.params)
        except aws.Rejected as exc:
            return aws.error(exc.status, exc.code, exc.message, exc.extra)
        except Busy as exc:
            return aws.error(402, "ServiceQuotaExceededException", str(exc))

    def _answer(self, operation: str, data: dict) -> Response:
        return Response.json(200, self.operations.output(operation, data))

    def _session(self, session_id: str | None) -> dict:
        with self._lock:
            record = self.sessions.get(session_id or "")
        if record is None:
            raise aws.Rejected(404, "ResourceNotFoundException", f"Session {session_id} not found")
        return record

    def status(self, record: dict) -> str:
        box = self.backend.get(record["id"])
        return "READY" if box is not None and box.state == "running" else "TERMINATED"

    # -- operations ------------------------------------------------------------------------------

    def op_StartCodeInterpreterSession(self, params: dict) -> Response:  # noqa: N802
        self.backend.admit()
        timeout = params.get("sessionTimeoutSeconds", DEFAULT_TIMEOUT_S)
        box = self.backend.reserve(timeout, label=params.get("name", ""))
        record = {
            "id": box.id,
            "name": params.get("name"),
            "createdAt": box.created_at,
            "lastUpdatedAt": box.created_at,
            "timeout": timeout,
        }
        with self._lock:
            self.sessions[box.id] = record
        try:
            self.backend.start(box)
        except ProviderError as exc:
            raise aws.Rejected(500, "InternalServerException", f"session failed: {exc}") from None
        return self._answer(
            "StartCodeInterpreterSession",
            {
                "codeInterpreterIdentifier": INTERPRETER,
                "sessionId": box.id,
                "createdAt": aws.timestamp(box.created_at),
            },
        )

    def op_StopCodeInterpreterSession(self, params: dict) -> Response:  # noqa: N802
        record = self._session(params["sessionId"])
        box = self.backend.get(record["id"])
        if box is not None:
            self.backend.kill(box, "stopped")
        record["lastUpdatedAt"] = datetime.now(UTC)
        return self._answer(
            "StopCodeInterpreterSession",
            {
                "codeInterpreterIdentifier": INTERPRETER,
                "sessionId": record["id"],
                "lastUpdatedAt": aws.timestamp(record["lastUpdatedAt"]),
            },
        )

    def op_GetCodeInterpreterSession(self, params: dict) -> Response:  # noqa: N802
        record = self._session(params["sessionId"])
        data = {
            "codeInterpreterIdentifier": INTERPRETER,
            "sessionId": record["id"],
            "createdAt": aws.timestamp(record["createdAt"]),
            "sessionTimeoutSeconds": record["timeout"],
            "status": self.status(record),
        }
        if record["name"]:
            data["name"] = record["name"]
        return self._answer("GetCodeInterpreterSession", data)

    def op_ListCodeInterpreterSessions(self, params: dict) -> Response:  # noqa: N802
        with self._lock:
            records = sorted(self.sessions.values(), key=lambda r: r["createdAt"], reverse=True)
        wanted = params.get("status")
        records = [r for r in records if wanted is None or self.status(r) == wanted]
        try:
            start = int(params.get("nextToken", "0"))
        except ValueError:
            raise aws.Rejected(
                400, "ValidationException", "invalid nextToken", {"reason": "FieldValidationFailed"}
            ) from None
        size = params.get("maxResults", 20)
        page = records[start : start + size]
        items = []
        for record in page:
            item = {
                "codeInterpreterIdentifier": INTERPRETER,
                "sessionId": record["id"],
                "status": self.status(record),
                "createdAt": aws.timestamp(record["createdAt"]),
                "lastUpdatedAt": aws.timestamp(record["lastUpdatedAt"]),
            }
            if record["name"]:
                item["name"] = record["name"]
            items.append(item)
        data: dict = {"items": items}
        if start + size < len(records):
            data["nextToken"] = str(start + size)
        return self._answer("ListCodeInterpreterSessions", data)

    def op_InvokeCodeInterpreter(self, params: dict) -> Response:  # noqa: N802
        record = self._session(params.get("sessionId"))
        box = self.backend.get(record["id"])
        if box is None or box.state != "running":
            raise aws.Rejected(
                404, "ResourceNotFoundException", f"Session {record['id']} is terminated"
            )
        tool = params["name"]
        arguments = params.get("arguments", {})
        handler = getattr(self, f"tool_{tool}", None)
        if handler is None:
            result = _text_result(f"the {tool} tool is not served by boxbench's fake", error=True)
        else:
            result = handler(box, arguments)
        body = aws.event("result", result)
        return Response(
            200,
            body,
            {
                "Content-Type": "application/vnd.amazon.eventstream",
                "x-amzn-code-interpreter-session-id": record["id"],
            },
        )

    # -- tools -----------------------------------------------------------------------------------

    def tool_executeCommand(self, box: Box, arguments: dict) -> dict:  # noqa: N802
        command = arguments.get("command")
        if not command:
            return _text_result("executeCommand needs a command", error=True)
        try:
            result = self.backend.run(box, ["/bin/sh", "-c", command], timeout_s=3600)
        except ProviderError as exc:
            return _text_result(f"command failed: {exc}", error=True)
        stdout = result.stdout.decode(errors="replace")
        stderr = result.stderr.decode(errors="replace")
        return {
            "content": [{"type": "text", "text": stdout + stderr}],
            "structuredContent": {
                "stdout": stdout,
                "stderr": stderr,
                "exitCode": result.exit_code,
                "executionTime": 0.0,
            },
            "isError": result.exit_code != 0,
        }

    def tool_writeFiles(self, box: Box, arguments: dict) -> dict:  # noqa: N802
        written = []
        for block in arguments.get("content") or []:
            data = block.get("blob")
            if data is None:
                data = block.get("text", "").encode()
            problem = self.backend.write_file(box, block["path"], data)
            if problem is not None:
                return _text_result(f"cannot write {block['path']}: {problem}", error=True)
            written.append(block["path"])
        return _text_result(f"Successfully wrote {len(written)} file(s): {', '.join(written)}")

    def tool_readFiles(self, box: Box, arguments: dict) -> dict:  # noqa: N802
        content = []
        for path in arguments.get("paths") or []:
            data = self.backend.read_file(box, path)
            if data is None:
                return _text_result(f"{path}: {MISSING}", error=True)
            content.append(
                {
                    "type": "resource",
                    "resource": {
                        "type": "blob",
                        "uri": f"file://{path}",
                        "mimeType": "application/octet-stream",
                        "blob": base64.b64encode(data).decode(),
                    },
                }
            )
        return {"content": content, "isError": False}

    def tool_removeFiles(self, box: Box, arguments: dict) -> dict:  # noqa: N802
        paths = arguments.get("paths") or []
        result = self.backend.run(box, ["/bin/rm", "-f", "--", *paths], timeout_s=60)
        if result.exit_code != 0:
            return _text_result(result.stderr.decode(errors="replace"), error=True)
        return _text_result(f"Removed {len(paths)} file(s)")


def _text_result(text: str, error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def _oversized_events():
    """A readFiles answer of hostile.OVERSIZED bytes, one MiB of file per result event."""
    blob = base64.b64encode(b"\0" * (1024 * 1024)).decode()
    block = {"type": "resource", "resource": {"type": "blob", "uri": "file:///x", "blob": blob}}
    for _ in range(hostile.OVERSIZED // (1024 * 1024)):
        yield aws.event("result", {"content": [block], "isError": False})
