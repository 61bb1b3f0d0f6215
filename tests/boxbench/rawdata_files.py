"""Valid raw-data files and their mutations, for the import tests and the fuzz test."""

import hashlib
import json

from bench.synthetic import synthetic_run


def valid_lines(trials: int = 40, seed: int = 3) -> list[str]:
    return list(synthetic_run(trials=trials, seed=seed))


def reseal(lines: list[str]) -> list[str]:
    """The lines with their trailer recomputed, so a change is judged by the checks it targets
    rather than by the digest."""
    body = [line for line in lines if '"type":"end"' not in line]
    digest = hashlib.sha256("".join(body).encode()).hexdigest()
    trailer = {"sha256": digest, "trials": len(body) - 1, "type": "end"}
    return [*body, json.dumps(trailer, separators=(",", ":")) + "\n"]


def with_field(lines: list[str], index: int, path: str, value, *, delete=False) -> list[str]:
    """`lines` with the field at `path` (dots for nesting) of line `index` set or deleted."""
    record = json.loads(lines[index])
    *parents, last = path.split(".")
    target = record
    for name in parents:
        target = target[int(name)] if isinstance(target, list) else target[name]
    key = int(last) if isinstance(target, list) else last
    if delete:
        del target[key]
    else:
        target[key] = value
    changed = list(lines)
    changed[index] = json.dumps(record, separators=(",", ":")) + "\n"
    return changed


def write(path, lines: list[str]):
    path.write_bytes("".join(lines).encode("utf-8", "surrogatepass"))
    return path


def field_paths(value, prefix: str = "") -> list[str]:
    """Every path `with_field` can reach in a decoded line (objects and lists, nested)."""
    paths = []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        path = f"{prefix}.{key}" if prefix else str(key)
        paths.append(path)
        if isinstance(item, dict | list) and item:
            paths.extend(field_paths(item, path))
    return paths


HOSTILE = [
    None,
    True,
    -1,
    0,
    1 << 15,
    1 << 31,
    1 << 63,
    1 << 70,
    -1.5,
    1e308,
    "",
    " ",
    "x" * 5000,
    "local box/../x",
    "nul\u0000",
    "2026-11-01T00:00:00",
    "0000-12-31T23:00:00Z",
    "9999-12-31T23:59:59.999999-01:00",
    "10000-01-01T00:00:00Z",
    "not-a-uuid",
    "success",
    "\ud7ff\ue000",
    [],
    [1, "a"],
    {},
    {"a": {"b": [None]}},
    {"": 1},
    {"k\u0000": 1},
]


def corpus(lines: list[str]) -> list[tuple[str, bytes]]:
    """About a hundred malformed files made from one valid file: (what is wrong, bytes)."""
    cases: list[tuple[str, list[str] | bytes]] = []
    header = json.loads(lines[0])
    trial = json.loads(lines[3])
    for path, value in [
        ("schema_version", 7),
        ("schema_version", "2"),
        ("type", "trial"),
        ("run", []),
        ("run.id", "x"),
        ("run.name", "n" * 201),
        ("run.status", "done"),
        ("run.started_at", "2026-13-01T00:00:00Z"),
        ("run.ended_at", "2000-01-01T00:00:00Z"),
        ("run.created_at", "0001-01-01T00:00:00+05:00"),
        ("manifest", None),
        ("manifest", {"k": "\u0000"}),
        ("audit_report", []),
        ("benchmarks", {}),
        ("benchmarks.0", "create"),
        ("benchmarks.0.slug", "Create Me"),
        ("benchmarks.0.slug", "c" * 81),
        ("benchmarks.0.version", ""),
        ("benchmarks.0.version", "v" * 21),
        ("benchmarks.0.section", "elsewhere"),
        ("benchmarks.0.direction", "up"),
        ("benchmarks.0.clock", "wall"),
        ("benchmarks.0.cpus", -2),
        ("benchmarks.0.memory_mib", 1 << 40),
        ("benchmarks.0.trials_per_unit", 0),
        ("benchmarks.0.charted", "yes"),
        ("benchmarks.0.required_capabilities", "exec"),
        ("benchmarks.0.units", None),
        ("benchmarks.0.units.0.slug", "../etc"),
        ("benchmarks.0.units.0.definition", [1]),
        ("benchmarks.0.measurements.metrics", []),
        ("providers.0.slug", "a.b"),
        ("providers.0.slug", ""),
        ("providers.0.region_marker", "m" * 21),
        ("providers.0.declaration", "{}"),
        ("providers.0.declaration_digest", "d" * 65),
    ]:
        cases.append((f"header {path} = {value!r:.40}", reseal(with_field(lines, 0, path, value))))
    cases.append(
        ("header without providers", reseal(with_field(lines, 0, "providers", 0, delete=True)))
    )
    cases.append(("header with an unknown field", reseal(with_field(lines, 0, "extra", 1))))
    twice = [*header["benchmarks"], header["benchmarks"][0]]
    cases.append(("a benchmark twice", reseal(with_field(lines, 0, "benchmarks", twice))))
    for path, value in [
        ("type", "run"),
        ("type", None),
        ("benchmark", "nope"),
        ("benchmark_version", "9"),
        ("unit", "other"),
        ("provider", "zulu"),
        ("provider", "a/b"),
        ("trial", "123"),
        ("trial", None),
        ("round", 0),
        ("round", 32768),
        ("round", 1.5),
        ("round", "1"),
        ("seq", 0),
        ("seq", 1 << 31),
        ("seq", True),
        ("attempt", -1),
        ("attempt", 1 << 16),
        ("replaces", trial["trial"]),
        ("replaces", "00000000-0000-0000-0000-000000000009"),
        ("batch", "b" * 101),
        ("outcome", "won"),
        ("outcome", ""),
        ("owner", "me"),
        ("cause", "nul \u0000 here"),
        ("cause", 5),
        ("job_host", "h" * 101),
        ("started_at", "2026-11-01"),
        ("started_at", "2026-11-01T00:00:00"),
        ("started_at", "10000-01-01T00:00:00Z"),
        ("ended_at", "2020-01-01T00:00:00Z"),
        ("ended_at", "0001-01-01T00:30:00+01:00"),
        ("started_at", "0001-01-01T00:00:00Z"),
        ("started_at", "2026-10-31T23:59:59Z"),
        ("ended_at", "9999-12-31T23:59:59Z"),
        ("ended_at", "2026-11-01T06:00:00.000001Z"),
        ("in_flight", -0.1),
        ("in_flight", 1.7e308),
        ("in_flight", "1"),
        ("placement", None),
        ("placement", [1]),
        ("placement", {"k\u0000": 1}),
        ("host_load", "busy"),
        ("metrics", []),
        ("metrics", {"create_ms": -1}),
        ("metrics", {"create_ms": "1"}),
        ("metrics", {"create_ms": 1.7e308}),
        ("metrics", {"create_ms": 1e12 * (1 + 1e-15)}),
        ("metrics", {"undeclared": 1.0}),
        ("metrics", {"m" * 81: 1.0}),
        ("stages", {"Read": 1.0}),
        ("cost_usd", -1e-9),
        ("cost_usd", 1e400),
        ("cost_usd", 1.7e308),
        ("clock_gates", {"metrics": {"create_ms": "maybe"}}),
        ("clock_gates", {"metrics": {"other": "pass"}}),
        ("clock_gates", []),
        ("surprise", 1),
    ]:
        cases.append((f"trial {path} = {value!r:.40}", reseal(with_field(lines, 3, path, value))))
    cases.append(("trial without seq", reseal(with_field(lines, 3, "seq", 0, delete=True))))
    cases.append(("trial without metrics", reseal(with_field(lines, 3, "metrics", 0, delete=True))))
    earlier = json.loads(lines[2])
    cases.append(("a trial id twice", reseal(with_field(lines, 6, "trial", earlier["trial"]))))
    cases.append(("a seq twice", reseal(with_field(lines, 3, "seq", earlier["seq"]))))
    cases.append(("a line twice", reseal([*lines[:4], lines[3], *lines[4:]])))
    cases.append(("two lines swapped", reseal([*lines[:2], lines[3], lines[2], *lines[4:]])))
    cases.append(("cut after the header", lines[:1]))
    cases.append(("cut at a line boundary", lines[: len(lines) // 2]))
    cases.append(("cut before the trailer", lines[:-1]))
    cases.append(("cut inside a line", "".join(lines)[: len("".join(lines)) // 2]))
    cases.append(("cut inside the header", lines[0][:100]))
    cases.append(("a line removed", [*lines[:5], *lines[6:]]))
    cases.append(("the header removed", lines[1:]))
    cases.append(("an empty file", []))
    cases.append(("only blank lines", ["\n", "  \n"]))
    cases.append(("a line after the trailer", [*lines, lines[4]]))
    cases.append(("garbage line", reseal([*lines[:4], "garbage\n", *lines[4:]])))
    cases.append(("a JSON array line", reseal([*lines[:4], "[1, 2]\n", *lines[4:]])))
    cases.append(("a JSON string line", reseal([*lines[:4], '"trial"\n', *lines[4:]])))
    cases.append(("binary bytes", b"\x00\x01\x02\xff\xfe" * 50))
    cases.append(("not UTF-8", "".join(lines).encode().replace(b"job-", b"\xff\xfe-", 1)))
    cases.append(("a line too long", reseal(with_field(lines, 4, "cause", "c" * (1 << 20)))))
    deep = "[" * 3000 + "]" * 3000
    cases.append(
        (
            "nested too deeply",
            reseal(
                [
                    *lines[:4],
                    lines[4].replace('"placement":{', '"placement":{"d":' + deep + ",", 1),
                    *lines[5:],
                ]
            ),
        )
    )
    trailer = json.loads(lines[-1])
    for path, value in [
        ("trials", trailer["trials"] + 1),
        ("trials", -1),
        ("sha256", "0" * 64),
        ("sha256", "X"),
    ]:
        changed = {**trailer, path: value}
        cases.append((f"trailer {path} = {value!r:.20}", [*lines[:-1], json.dumps(changed) + "\n"]))
    cases.append(("a changed line under the digest", with_field(lines, 5, "cause", "edited")))
    version_1 = with_field(lines, 0, "schema_version", 1)
    cases.append(("version 1 with a trailer", version_1))
    out = []
    for name, content in cases:
        data = (
            content
            if isinstance(content, bytes)
            else "".join(content).encode("utf-8", "surrogatepass")
        )
        out.append((name, data))
    return out
