"""Each fake keeps to its provider's published spec: every route it answered is a route of the
spec, with a status the spec lists (or a documented error), and every JSON body validates against
the spec's schema. The spec subsets live in specs/ (spec text, with their source commits), so a
fake that drifts from the spec fails here."""

import base64
import re
from pathlib import Path

import pytest
import yaml

from runner import lifecycle, waiting
from runner.cleanup import wait_gone
from runner.limits import Timer
from runner.providers.base import NotReady, ProviderError, SandboxSpec
from runner.providers.fakes import connect
from tests.providers.cloud.helpers import running_fake

SPECS = Path(__file__).with_name("specs")
SPEC = SandboxSpec(cpus=2, memory_mib=4096, label="bb-spec", lifetime_s=120)


def validate(value, schema, schemas, where="body") -> list[str]:
    """Problems of `value` against an OpenAPI 3.0 / Swagger 2 schema (the subset the specs use)."""
    if "$ref" in schema:
        return validate(value, schemas[schema["$ref"].rsplit("/", 1)[1]], schemas, where)
    if value is None:
        return [] if schema.get("nullable") else [f"{where}: null where the spec has no null"]
    kind = schema.get("type") or ("object" if "properties" in schema else None)
    types = {"object": dict, "array": list, "string": str, "boolean": bool}
    if kind in types and not isinstance(value, types[kind]):
        return [f"{where}: {type(value).__name__} where the spec says {kind}"]
    if kind == "integer" and (not isinstance(value, int) or isinstance(value, bool)):
        return [f"{where}: {value!r} is not an integer"]
    if kind == "number" and (not isinstance(value, int | float) or isinstance(value, bool)):
        return [f"{where}: {value!r} is not a number"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r} not among {schema['enum']}"]
    if "minimum" in schema and value < schema["minimum"]:
        return [f"{where}: {value!r} below the minimum {schema['minimum']}"]
    problems = []
    if kind == "object":
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"{where}: required field {name!r} missing")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            if name in properties:
                problems += validate(item, properties[name], schemas, f"{where}.{name}")
            elif isinstance(extra, dict) and extra:
                problems += validate(item, extra, schemas, f"{where}.{name}")
            elif properties and extra is None:
                problems.append(f"{where}: field {name!r} is not in the spec")
    if kind == "array":
        for index, item in enumerate(value):
            problems += validate(item, schema.get("items", {}), schemas, f"{where}[{index}]")
    return problems


def template(path: str) -> re.Pattern:
    return re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$")


def check(exchanges, section: dict, prefix: str = "") -> list[str]:
    problems = []
    routes = [(template(prefix + p), p, ops) for p, ops in section["paths"].items()]
    for request, response in exchanges:
        found = [(p, ops) for pattern, p, ops in routes if pattern.match(request.path)]
        where = f"{request.method} {request.path} -> {response.status}"
        if not found:
            problems.append(f"{where}: the fake serves a route the spec does not have")
            continue
        path, ops = found[0]
        operation = ops.get(request.method.lower())
        if operation is None:
            problems.append(f"{where}: the spec has no {request.method} on {path}")
            continue
        documented = operation["responses"].get(str(response.status))
        if documented is None and response.status < 400:
            problems.append(f"{where}: status {response.status} is not in the spec for {path}")
            continue
        schema = (documented or {}).get("schema")
        if documented is None:
            schema = {"$ref": "#/x/" + section["errors"]}
        if not schema or schema.get("type") == "file" or not isinstance(response.body, bytes):
            continue
        if response.headers.get("Content-Type") != "application/json":
            continue
        import json

        problems += validate(json.loads(response.body), schema, section["schemas"], where)
    return problems


def record(server) -> list:
    exchanges = []
    app = server.app

    def recording(request):
        response = app(request)
        if not isinstance(response.body, bytes):  # a stream: keep a copy of what was sent
            sent = []
            stream = response.body

            def tee():
                for chunk in stream:
                    sent.append(chunk)
                    yield chunk

            response.body = tee()
            response.sent = sent
        exchanges.append((request, response))
        return response

    server.app = recording
    return exchanges


def exercise(found) -> None:
    """Every route the adapter uses, on the happy path and its documented failures."""
    provider = found.provider
    sandbox = provider.create(SPEC)
    lifecycle.readiness_check(provider, sandbox)
    provider.exec(sandbox, ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], 10)
    provider.exec(sandbox, ["/bin/cat"], 10, stdin=b"input")
    provider.exec(sandbox, ["/bin/sh", "-c", "sleep 0.2"], 120)  # the async path where there is one
    provider.upload(sandbox, "/app/f", b"data")
    provider.download(sandbox, "/app/f")
    with pytest.raises(ProviderError):
        provider.download(sandbox, "/app/missing")
    with pytest.raises(ProviderError):
        provider.exec(sandbox, ["sleep", "5"], 0.3)
    provider.list_sandboxes(SPEC.label)
    if found.slug in ("e2b", "daytona", "vercel"):  # snapshots: these three declare them
        snapshot_id = provider.snapshot(sandbox)
        provider.destroy(provider.restore(snapshot_id, SPEC))
        provider.list_snapshots(SPEC.label)
        provider.delete_snapshot(snapshot_id)
        # Daytona removes a snapshot in the background (`removing` first).
        gone = lambda: provider.snapshot_gone(snapshot_id)  # noqa: E731
        assert waiting.poll_until(gone, 5, waiting.every(0.02))
        provider.delete_snapshot(snapshot_id)  # 404: gone already
    if found.slug in ("e2b", "daytona"):  # forks: Vercel declares none
        provider.destroy(provider.fork(sandbox, SPEC))
    if found.slug == "vercel":  # the snapshot stopped the session: the next command resumes it
        provider.exec(sandbox, ["true"], 10)
    assert all(check.ok for check in provider.doctor())
    provider.destroy(sandbox)
    assert wait_gone(provider, sandbox.id, 5, Timer())
    # Gone: E2B's and Daytona's proxies answer 502; Vercel's API says the sandbox is stopped.
    with pytest.raises(ProviderError if found.slug == "vercel" else NotReady):
        provider.exec(sandbox, ["true"], 5)
    bad = found.adapter(**{found.credential_setting(): "wrong-key-for-the-spec-check"})
    with pytest.raises(ProviderError):
        bad.create(SPEC)


@pytest.mark.parametrize("slug", ["e2b", "daytona", "vercel"])
def test_the_fake_keeps_to_the_published_spec(slug, tmp_path):
    spec = yaml.safe_load((SPECS / f"{slug}.yaml").read_text())
    with running_fake(slug, tmp_path) as found:
        api = record(found.api)
        data = api if slug == "vercel" else record(found.data_plane)
        exercise(found)
        if slug == "vercel":
            problems = check(api, spec["api"], prefix="/api")
            problems += check_ndjson(api, spec["api"]["schemas"])
        elif slug == "e2b":
            problems = check(api, spec["api"])
            plain = [
                (q, r)
                for q, r in data
                # 502 is the sandbox proxy's own answer (a sandbox not reachable), not envd's.
                if not q.path.startswith("/process.Process/") and r.status != 502
            ]
            problems += check(plain, spec["envd"])
            problems += check_connect(data, spec["process_events"])
        else:
            problems = check(api, spec["api"], prefix="/api")
            toolbox = [(q, r) for q, r in data if r.status != 502]  # the proxy's own answer
            for request, _ in toolbox:
                request.path = re.sub(r"^/toolbox/[^/]+", "", request.path)
            problems += check(toolbox, spec["toolbox"])
    assert len(api) >= 5 and len(data) >= 8
    assert problems == []


def check_ndjson(exchanges, schemas: dict) -> list[str]:
    """Vercel's streams: `/cmd` with wait and logs sends the command, its log records, then the
    finished command; logs send stdout, stderr or error records (what log_stream.py reads)."""
    import json

    problems, streams = [], 0
    for request, response in exchanges:
        sent = getattr(response, "sent", None)
        if sent is None or response.status != 200:
            continue
        streams += 1
        lines = [json.loads(line) for line in b"".join(sent).splitlines() if line.strip()]
        where = f"{request.method} {request.path}"
        if request.path.endswith("/cmd"):
            if len(lines) < 2 or "command" not in lines[0] or "command" not in lines[-1]:
                problems.append(f"{where}: the stream does not start and end with the command")
                continue
            for index, line in enumerate(lines):
                name = "CommandResponse" if index in (0, len(lines) - 1) else log_record(line)
                problems += validate(line, {"$ref": "#/" + name}, schemas, f"{where}[{index}]")
            if lines[-1]["command"].get("exitCode") is None:
                problems.append(f"{where}: the last command has no exit code")
        else:
            for index, line in enumerate(lines):
                problems += validate(
                    line, {"$ref": "#/" + log_record(line)}, schemas, f"{where}[{index}]"
                )
    if streams < 2:
        problems.append("no command or log stream was checked")
    return problems


def log_record(line: dict) -> str:
    return "LogError" if line.get("stream") == "error" else "LogLineOutput"


def check_connect(exchanges, proto: dict) -> list[str]:
    """Process RPCs are in process.proto, and Start streams only ProcessEvent's fields."""
    problems, streamed = [], 0
    for request, response in exchanges:
        if not request.path.startswith("/process.Process/"):
            continue
        rpc = request.path.rsplit("/", 1)[1]
        if rpc not in proto["rpcs"]:
            problems.append(f"{rpc} is not an RPC of process.proto")
        if rpc != "Start" or response.status != 200:
            continue
        streamed += 1
        for flags, message in connect.read_envelopes(response.sent):
            if flags & connect.END_STREAM:
                continue
            [(kind, event)] = message["event"].items()
            allowed = {"start": "StartEvent", "data": "DataEvent", "end": "EndEvent"}.get(kind)
            if kind not in proto["ProcessEvent"]:
                problems.append(f"event {kind!r} is not a ProcessEvent field")
            elif allowed and set(event) - set(proto[allowed]):
                problems.append(f"{kind} has fields outside {allowed}: {sorted(event)}")
            if kind == "data":
                for value in event.values():
                    base64.b64decode(value, validate=True)
    if not streamed:
        problems.append("no process stream was checked")
    return problems


def test_the_validator_catches_drift():
    schemas = {
        "S": {
            "required": ["id"],
            "properties": {"id": {"type": "string"}, "n": {"type": "integer", "minimum": 1}},
        }
    }
    assert validate({"id": "x", "n": 2}, {"$ref": "#/S"}, schemas) == []
    assert validate({"n": 0, "extra": 1}, {"$ref": "#/S"}, schemas) == [
        "body: required field 'id' missing",
        "body.n: 0 below the minimum 1",
        "body: field 'extra' is not in the spec",
    ]
