"""How a refused file is reported: `FILE, line N, field F: what is wrong`."""

import re

import msgspec

from boxbench.rawdata.schema import SHA256_PATTERN, SLUG_PATTERN, VERSION_PATTERN


class RawDataError(Exception):
    """A file that cannot be imported (or a run that cannot be exported); the message names the
    file, line and field."""


class FieldError(Exception):
    """A field of the line being read is wrong; the reader adds the file and line."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"field {field!r}: {problem}")
        self.field = field
        self.problem = problem


def at(source: str, number: int | None, error: FieldError | str) -> RawDataError:
    where = source if number is None else f"{source}, line {number}"
    joiner = ", " if isinstance(error, FieldError) else ": "
    return RawDataError(f"{where}{joiner}{error}")


_PATTERNS = {
    SLUG_PATTERN: "a slug (letters, digits, '-' and '_')",
    VERSION_PATTERN: "a version (letters, digits, '-', '_', '.' and '+')",
    SHA256_PATTERN: "64 lowercase hexadecimal digits",
}
_LOCATED = re.compile(r"^(?P<problem>.*) - at (?P<key>`key` in )?`\$(?P<path>[^`]*)`$", re.DOTALL)
_FIELD_NAMED = re.compile(
    r"^Object (?P<what>missing required|contains unknown) field `(?P<name>.*)`$"
)


def lowercase_first(text: str) -> str:
    """'Expected …' reads 'expected …' after a colon; 'JSON …' stays as it is."""
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def from_validation(error: msgspec.ValidationError) -> FieldError | str:
    """msgspec's message as `field F: problem`, or the bare problem when it names no field."""
    message = str(error)
    path = ""
    located = _LOCATED.match(message)
    if located:
        message, path = located["problem"], located["path"].lstrip(".")
        if located["key"]:
            path = f"{path}{KEY_SUFFIX}"
    named = _FIELD_NAMED.match(message)
    if named:
        name = named["name"]
        field = f"{path}.{name}" if path else name
        missing = named["what"] == "missing required"
        return FieldError(field, "is missing" if missing else "is not a field of the format")
    for pattern, words in _PATTERNS.items():
        message = message.replace(f"matching regex {pattern!r}", f"that is {words}")
    message = lowercase_first(message)
    if not path:
        return message
    return FieldError(path, message)


KEY_SUFFIX = " (a key)"
_TOKENS = re.compile(r"(\w+)|\[(\d+)\]|(\[\.\.\.\])")


def name_keys(error: FieldError, raw: bytes, decoder) -> FieldError:
    """msgspec names an object entry `[...]`; find which key it is, so the message names it.

    Only on the error path: each key of the object is tried alone in a copy of the line, and the
    key whose copy still fails the same way is the one."""
    if "[...]" not in error.field:
        return error
    try:
        data = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return error
    # A refused key (an operation or owner outside its enumeration) is named by its object.
    path, key_suffix = error.field, ""
    if path.endswith(KEY_SUFFIX):
        path, key_suffix = path[: -len(KEY_SUFFIX)], KEY_SUFFIX
    node, concrete, named = data, [], []
    for name, index, _ in _TOKENS.findall(path):
        if name or index:
            key = name or int(index)
            try:
                node = node[key]
            except (KeyError, IndexError, TypeError):
                return error
            concrete.append(key)
            named.append(f".{key}" if name else f"[{key}]")
            continue
        if not isinstance(node, dict):
            return error
        culprit = _culprit(data, concrete, node, decoder, error.field)
        if culprit is None:
            return error
        node = node[culprit]
        concrete.append(culprit)
        named.append(f".{culprit}" if re.fullmatch(r"\w+", culprit) else f"[{culprit!r}]")
    return FieldError("".join(named).lstrip(".") + key_suffix, error.problem)


def _culprit(data, path: list, node: dict, decoder, field: str):
    import copy

    for key in node:
        trial = copy.deepcopy(data)
        target = trial
        for step in path:
            target = target[step]
        target.clear()
        target[key] = node[key]
        try:
            decoder.decode(msgspec.json.encode(trial))
        except msgspec.ValidationError as exc:
            again = from_validation(exc)
            if isinstance(again, FieldError) and again.field == field:
                return key
    return None
