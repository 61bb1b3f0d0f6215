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
