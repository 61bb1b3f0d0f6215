"""`agentcore`: Amazon Bedrock AgentCore code-interpreter sessions, through boto3.

boto3 is an optional dependency (requirements-agentcore.txt, pinned); without it, or without AWS
credentials and a region, the provider is refused before a run. Credentials are found the AWS
way (boto3's chain: the environment, AWS_PROFILE and the shared config and credentials files,
a role), and AWS_SECRET_ACCESS_KEY_FILE / AWS_SESSION_TOKEN_FILE name files holding the secret
(credentials.py); the adapter builds its own boto3 session with them, never logs them, and strips
them from every error text.

A sandbox is one session of a code interpreter (BOXBENCH_AGENTCORE_INTERPRETER, default AWS's
system interpreter `aws.codeinterpreter.v1`): StartCodeInterpreterSession with the batch label as
the session's `name` and the lifetime as `sessionTimeoutSeconds` (the service ends the session
then, at most 8 h); StopCodeInterpreterSession ends it; a session is gone once Get answers
TERMINATED or not found. Listing pages through ListCodeInterpreterSessions (READY ones) and
reads the label from each session's name.

Commands and files go through InvokeCodeInterpreter, whose answer is an event stream of results:
`executeCommand` takes one shell command, so argv is quoted, the working directory entered, the
environment set with `env`, stdin written first as a file (`writeFiles`), redirected and removed
before the command starts; the command runs under `timeout -s KILL` (the tool has no time limit of
its own), which kills its whole process group, reported as ExecTimeout. Files: `writeFiles` (bytes
as a blob) and `readFiles` (a resource block with the bytes). The image and the machine size are the
interpreter's own: the API chooses neither.

No SDK retries: a throttled or failed call is the trial's failure (the chain already spaces
creates), and a command is never sent twice.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import re
import shlex
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from runner.providers.answers import AnswerLimits, Capped, Listing, Reader
from runner.providers.base import (
    CredentialsRejected,
    DoctorCheck,
    ExecResult,
    ExecTimeout,
    LiveSandbox,
    NotReady,
    Provider,
    ProviderError,
    Sandbox,
    SandboxSpec,
)
from runner.providers.credentials import MissingCredential, credential, redact

SERVICE = "bedrock-agentcore"
DEFAULT_INTERPRETER = "aws.codeinterpreter.v1"
MAX_LIFETIME_S = 8 * 3600  # the model's maximum sessionTimeoutSeconds (28800)
SDK_MISSING = "boto3 is not installed: pip install -r requirements-agentcore.txt"
NO_REGION = "not configured: set AWS_REGION (or AWS_DEFAULT_REGION, or a region in the profile)"
# "Every provider runs in its default US region": AWS has no default one, so any commercial US
# region (us-east-1, us-west-2...) is accepted and recorded on every trial; GovCloud is not.
US_REGION = re.compile(r"^us-(east|west)-\d+$")
NO_CREDENTIALS = (
    "not configured: no AWS credentials (set AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY or "
    "AWS_SECRET_ACCESS_KEY_FILE, or AWS_PROFILE, or the shared credentials file)"
)
TIMED_OUT = (124, 128 + 9)  # timeout(1)'s status for an expired command, and for its SIGKILL
CONTROL_READ_TIMEOUT_S = 60
COMMAND_READ_TIMEOUT_S = 3700  # beyond the longest command the lifecycle runs (1 h)

# Error codes of the service (the model's errors) and of AWS's front door, by what they mean.
GONE = {"ResourceNotFoundException"}
LIMITED = {"ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException"}
UNAUTHORIZED = {
    "AccessDeniedException",
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "ExpiredTokenException",
    "MissingAuthenticationTokenException",
    "IncompleteSignature",
}
# A bare 502, 503 or 504 from AWS's edge has no error type: botocore names it by its status.
UNAVAILABLE = {
    "InternalServerException",
    "ServiceUnavailableException",
    "ServiceUnavailable",
    "InternalFailure",
    "502",
    "503",
    "504",
}


def _drop(record: logging.LogRecord) -> bool:
    return False


# botocore logs each request it sends at DEBUG, headers included: the session token travels as
# X-Amz-Security-Token, and the signing steps log the canonical request. Nothing there is worth
# the leak, so those records are dropped wherever they are made.
for _name in (
    "botocore.endpoint",
    "botocore.auth",
    "botocore.hooks",
    "botocore.parsers",
    "urllib3.connectionpool",
):
    logging.getLogger(_name).addFilter(_drop)


class AgentCoreProvider(Provider):
    slug = "agentcore"
    stdin_adds_requests = True

    def __init__(self, declaration, settings: dict | None = None):
        super().__init__(declaration, settings)
        self.interpreter = (
            self.settings.get("interpreter")
            or os.environ.get("BOXBENCH_AGENTCORE_INTERPRETER")
            or DEFAULT_INTERPRETER
        )
        self.endpoint_url = self.settings.get("endpoint_url") or None
        self._problem = None
        self.limits = AnswerLimits.from_settings(self.settings)
        self._secrets: tuple[str | None, ...] = ()
        self._session: Any = None
        if importlib.util.find_spec("boto3") is None:
            self._problem = SDK_MISSING
        else:
            try:
                self._session = self._boto_session()
            except MissingCredential as exc:
                self._problem = str(exc)
        self._control = self._commands = None

    def configuration_problem(self) -> str | None:
        return self._problem

    def _boto_session(self):
        import boto3
        import botocore.exceptions

        key_id = credential("AWS_ACCESS_KEY_ID", self.settings, "access_key_id")
        secret = credential("AWS_SECRET_ACCESS_KEY", self.settings, "secret_access_key")
        token = credential("AWS_SESSION_TOKEN", self.settings, "session_token")
        # boto3 reads AWS_DEFAULT_REGION and the profile's; AWS_REGION (the newer SDKs' name)
        # is read here, first.
        region = self.settings.get("region") or os.environ.get("AWS_REGION", "").strip() or None
        explicit = {}
        if key_id and secret:  # else boto3's own chain: profile, shared files, a role
            explicit = {
                "aws_access_key_id": key_id,
                "aws_secret_access_key": secret,
                "aws_session_token": token,
            }
        try:
            session = boto3.Session(region_name=region, **explicit)
            found = session.get_credentials()
        except botocore.exceptions.BotoCoreError as exc:  # a broken profile or config file
            raise MissingCredential(f"not configured: {exc}", code="unconfigured") from None
        if found is None:
            raise MissingCredential(NO_CREDENTIALS, code="unconfigured")
        frozen = found.get_frozen_credentials()
        self._secrets = (frozen.secret_key, frozen.token, frozen.access_key)
        if not session.region_name:
            raise MissingCredential(NO_REGION, code="unconfigured")
        if not US_REGION.match(session.region_name):
            raise MissingCredential(
                f"region {session.region_name} is outside the US: the methodology runs every "
                "provider in a US region; set AWS_REGION to one (us-east-1, us-west-2...)",
                code="unconfigured",
            )
        return session

    # -- plumbing ---------------------------------------------------------------------------------

    def _client(self, commands: bool = False):
        """One client for the control calls and one for commands, whose answers may take as
        long as the command: the read timeout differs, nothing else."""
        if self._problem:
            raise ProviderError(f"agentcore: {self._problem}", code="unconfigured")
        attribute = "_commands" if commands else "_control"
        client = getattr(self, attribute)
        if client is None:
            from botocore.config import Config

            config = Config(
                retries={"mode": "standard", "total_max_attempts": 1},
                connect_timeout=10,
                read_timeout=COMMAND_READ_TIMEOUT_S if commands else CONTROL_READ_TIMEOUT_S,
                max_pool_connections=16,
                user_agent_extra="boxbench",
            )
            client = self._session.client(SERVICE, endpoint_url=self.endpoint_url, config=config)
            setattr(self, attribute, client)
        return client

    def _reader(self, operation: str) -> Reader:
        return Reader("agentcore", operation, self._secrets)

    def _call(self, operation: str, fn, data_plane: bool = False):
        """Run one SDK call, its errors mapped to the lifecycle's (every credential removed)."""
        import botocore.eventstream
        import botocore.exceptions as errors

        try:
            return fn()
        except botocore.eventstream.ParserError as exc:  # a broken or oversized event
            raise self._reader(operation).fail(f"{type(exc).__name__}: {exc}") from None
        except errors.ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            text = self._text(operation, exc)
            if code in GONE:
                raise ProviderError(text, operation, "not_found") from None
            if code in LIMITED:
                raise ProviderError(text, operation, "rate_limited") from None
            if code in UNAUTHORIZED:
                raise CredentialsRejected(text, operation, "unauthorized") from None
            if code in UNAVAILABLE:
                kind = NotReady if data_plane else ProviderError
                raise kind(text, operation=operation, code="unavailable") from None
            raise ProviderError(text, operation, "rejected") from None
        except errors.ParamValidationError as exc:
            raise ProviderError(self._text(operation, exc), operation, "rejected") from None
        except (
            errors.EndpointConnectionError,
            errors.ConnectionClosedError,
            errors.ConnectTimeoutError,
        ) as exc:
            kind = NotReady if data_plane else ProviderError
            raise kind(
                self._text(operation, exc), operation=operation, code="unavailable"
            ) from None
        except errors.ReadTimeoutError as exc:
            raise ProviderError(self._text(operation, exc), operation, "unavailable") from None
        except errors.NoCredentialsError as exc:
            raise ProviderError(self._text(operation, exc), operation, "unconfigured") from None
        except errors.BotoCoreError as exc:
            raise ProviderError(self._text(operation, exc), operation, "rejected") from None

    def _text(self, operation: str, exc: BaseException) -> str:
        return redact(f"agentcore {operation}: {type(exc).__name__}: {exc}", *self._secrets)

    def _invoke(
        self, operation: str, session_id: str, tool: str, arguments: dict, cap: int, setting: str
    ) -> dict:
        """One tool call; the merged result of its event stream (results and modelled errors),
        its texts and blobs together at most `cap` bytes."""
        client = self._client(commands=True)
        counted = Capped(self._reader(operation), cap, "the tool's answer", setting)

        def call() -> dict:
            answer = client.invoke_code_interpreter(
                codeInterpreterIdentifier=self.interpreter,
                sessionId=session_id,
                name=tool,
                arguments=arguments,
            )
            merged: dict = {"content": [], "structuredContent": {}, "isError": False}
            for event in answer["stream"]:
                result = event.get("result")
                if not isinstance(result, dict):
                    continue
                for size in _sizes(result):
                    counted.count(size)
                merged["content"] += result.get("content", [])
                merged["structuredContent"].update(result.get("structuredContent") or {})
                merged["isError"] = merged["isError"] or bool(result.get("isError"))
            return merged

        return self._call(operation, call, data_plane=True)

    def _tool_error(self, operation: str, result: dict) -> str:
        text = " ".join(b.get("text", "") for b in result["content"] if b.get("type") == "text")
        return redact(f"agentcore {operation}: {text.strip() or 'the tool failed'}", *self._secrets)

    # -- lifecycle -------------------------------------------------------------------------------

    def create(self, spec: SandboxSpec) -> Sandbox:
        if spec.image:
            raise ProviderError(
                f"agentcore runs its code interpreter's own image, not image {spec.image!r}",
                operation="create",
                code="no_custom_images",
            )
        if spec.lifetime_s > MAX_LIFETIME_S:
            raise ProviderError(
                f"agentcore sessions live at most 8 h, not {spec.lifetime_s:g} s",
                operation="create",
                code="unsupported_lifetime",
            )
        client = self._client()
        answer = self._call(
            "create",
            lambda: client.start_code_interpreter_session(
                codeInterpreterIdentifier=self.interpreter,
                name=spec.label,
                sessionTimeoutSeconds=max(1, math.ceil(spec.lifetime_s)),
            ),
        )
        return Sandbox(
            id=self._reader("create").key(answer, "sessionId"),
            label=spec.label,
            created_at=_utc(answer.get("createdAt")) or datetime.now(UTC),
            facts={
                # Counted on the provider page, as Modal's placement reports its own.
                "provider_region": self._session.region_name,
                "interpreter": self.interpreter,
                "cpus": spec.cpus,
                "memory_mib": spec.memory_mib,
                # The interpreter fixes its size; the API has no size to ask for or enforce.
                "enforced": {"cpus": False, "memory": False},
            },
        )

    def exec(self, sandbox, argv, timeout, stdin=None, workdir=None, env=None) -> ExecResult:
        if not argv:
            raise ProviderError("agentcore exec: empty argv", operation="exec")
        stdin_path = None
        if stdin:
            stdin_path = f"/tmp/.boxbench-stdin-{uuid.uuid4().hex}"
            self._write(sandbox, stdin_path, stdin, "exec")
        command = _command(argv, timeout, stdin_path, workdir, env)
        started = time.monotonic()
        limits = self.limits
        result = self._invoke(
            "exec",
            sandbox.id,
            "executeCommand",
            {"command": command},
            limits.exec_answer_bytes(),
            "max_output_mib",
        )
        out = result["structuredContent"]
        if "exitCode" not in out:
            raise ProviderError(self._tool_error("exec", result), operation="exec")
        reader = self._reader("exec")
        code = reader.key(out, "exitCode", int, "the command's result")
        for stream in ("stdout", "stderr"):
            text = out.get(stream) or ""
            if not isinstance(text, str):
                raise reader.fail(f"`{stream}` in the command's result is not a string")
            Capped(reader, limits.output_bytes, f"the command's {stream}", "max_output_mib").add(
                text.encode()
            )
        if code in TIMED_OUT and time.monotonic() - started >= timeout:
            raise ExecTimeout(
                f"agentcore: command did not return within {timeout:g} s in {sandbox.id}",
                operation="exec",
            )
        return ExecResult(
            code, (out.get("stdout") or "").encode(), (out.get("stderr") or "").encode()
        )

    def _write(self, sandbox, path: str, data: bytes, operation: str) -> None:
        result = self._invoke(
            operation,
            sandbox.id,
            "writeFiles",
            {"content": [{"path": path, "blob": data}]},
            self.limits.answer_bytes,
            "",
        )
        if result["isError"]:
            raise ProviderError(self._tool_error(operation, result), operation=operation)

    def upload(self, sandbox, path, data) -> None:
        self._write(sandbox, path, data, "upload")

    def download(self, sandbox, path) -> bytes:
        result = self._invoke(
            "download",
            sandbox.id,
            "readFiles",
            {"paths": [path]},
            self.limits.download_bytes + self.limits.answer_bytes,
            "max_download_mib",
        )
        if result["isError"]:
            text = self._tool_error("download", result)
            code = "not_found" if "no such file" in text.lower() else ""
            raise ProviderError(text, operation="download", code=code)
        for block in result["content"]:
            resource = (block.get("resource") or {}) if isinstance(block, dict) else {}
            if block.get("type") != "resource" or not isinstance(resource, dict):
                continue
            data = resource.get("blob")
            if data is None and isinstance(resource.get("text"), str):
                data = resource["text"].encode()
            if isinstance(data, bytes):
                capped = Capped(
                    self._reader("download"),
                    self.limits.download_bytes,
                    f"the file {path}",
                    "max_download_mib",
                )
                capped.add(data)
                return data
        raise ProviderError(f"agentcore download: no content for {path}", operation="download")

    def destroy(self, sandbox) -> None:
        client = self._client()
        try:
            self._call(
                "destroy",
                lambda: client.stop_code_interpreter_session(
                    codeInterpreterIdentifier=self.interpreter, sessionId=sandbox.id
                ),
            )
        except ProviderError as exc:
            if exc.code != "not_found":  # gone is gone
                raise

    def is_gone(self, sandbox_id: str) -> bool:
        client = self._client()
        try:
            answer = self._call(
                "is_gone",
                lambda: client.get_code_interpreter_session(
                    codeInterpreterIdentifier=self.interpreter, sessionId=sandbox_id
                ),
            )
        except ProviderError as exc:
            if exc.code == "not_found":
                return True
            raise
        return answer.get("status") == "TERMINATED"

    def list_sandboxes(self, label: str | None = None) -> list[LiveSandbox]:
        client = self._client()

        def listing() -> list[LiveSandbox]:
            found, token = [], None
            reader = self._reader("list")
            guard = Listing(reader, self.limits.pages)
            while True:  # the model has no paginator for it: nextToken by hand
                page = client.list_code_interpreter_sessions(
                    codeInterpreterIdentifier=self.interpreter,
                    status="READY",
                    maxResults=100,
                    **({"nextToken": token} if token else {}),
                )
                for item in page.get("items", []):
                    name = item.get("name", "")
                    if label is None or name == label:
                        found.append(
                            LiveSandbox(
                                id=reader.key(item, "sessionId", what="a listed session"),
                                label=name,
                                created_at=_utc(item.get("createdAt")),
                            )
                        )
                token = page.get("nextToken")
                if not guard.more(token):
                    return found

        return self._call("list", listing)

    def endpoints(self) -> list[tuple[str, int]]:
        if self._problem:
            return []
        from urllib.parse import urlsplit

        parts = urlsplit(self._client().meta.endpoint_url)
        return [(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))]

    def doctor(self) -> list[DoctorCheck]:
        if self._problem:
            name = "sdk" if self._problem == SDK_MISSING else "credentials"
            return [DoctorCheck.not_configured(name, self._problem)]
        started = time.monotonic()
        try:
            client = self._client()
            self._call(
                "doctor",
                lambda: client.list_code_interpreter_sessions(
                    codeInterpreterIdentifier=self.interpreter, maxResults=1
                ),
            )
        except ProviderError as exc:
            return [DoctorCheck("api", False, str(exc))]
        elapsed = (time.monotonic() - started) * 1000
        return [
            DoctorCheck(
                "credentials", True, f"AWS credentials found, region {self._session.region_name}"
            ),
            DoctorCheck(
                "api",
                True,
                f"{client.meta.endpoint_url} listed the sessions of "
                f"{self.interpreter} in {elapsed:.0f} ms",
            ),
        ]


def _command(argv, timeout, stdin_path, workdir, env) -> str:
    """One shell command for executeCommand: argv quoted, run under timeout(1) in its own process
    group (killed whole when the limit passes), its stdin file removed before it starts (and
    afterwards, should it never have been opened)."""
    seconds = max(0.001, float(timeout))
    parts = ["timeout", "-s", "KILL", f"{seconds:.3f}"]
    if env:
        parts += ["env", "--", *(f"{key}={value}" for key, value in env.items())]
    if stdin_path:
        # Opened by the process that becomes the command (timeout(1) keeps no copy a program
        # could reopen through /proc) and removed before the command starts: stdin can carry the
        # guest clock's key (clock.py).
        parts += ["/bin/sh", "-c", 'exec < "$0" || exit 125; rm -f -- "$0"; exec "$@"', stdin_path]
    line = shlex.join(parts + list(argv)) + " < /dev/null"
    if workdir:
        line = f"cd -- {shlex.quote(workdir)} && {line}"
    if stdin_path:
        line = f"{line}; status=$?; rm -f -- {shlex.quote(stdin_path)}; exit $status"
    return line


def _utc(moment: datetime | None) -> datetime | None:
    return moment.astimezone(UTC) if moment is not None else None


def _sizes(value, depth: int = 0):
    """The sizes of the strings and bytes in a tool result, as the stream delivers them."""
    if isinstance(value, str | bytes):
        yield len(value)
    elif depth < 8 and isinstance(value, dict):
        for item in value.values():
            yield from _sizes(item, depth + 1)
    elif depth < 8 and isinstance(value, list):
        for item in value:
            yield from _sizes(item, depth + 1)
