"""The reference tables of docs/raw-data.md, rendered from the schema so the two cannot differ.

    python manage.py shell -c "from boxbench.rawdata import docs; docs.write()"

tests/boxbench/test_rawdata_docs.py fails when the file and the schema disagree.
"""

from pathlib import Path

import msgspec.inspect as mi

BEGIN = (
    "<!-- schema tables: rendered from boxbench/rawdata/schema.py by docs.write(); do not edit -->"
)
END = "<!-- end of schema tables -->"
DOC = Path(__file__).resolve().parents[2] / "docs" / "raw-data.md"

NAMES = {
    "SLUG": "a slug: letters, digits, `-` and `_`",
    "VERSION": "letters, digits, `-`, `_`, `.` and `+`",
    "SHA256": "64 lowercase hexadecimal digits",
}


def _structs():
    from boxbench.rawdata import schema

    return [
        schema.Header,
        schema.RunInfo,
        schema.BenchmarkEntry,
        schema.UnitEntry,
        schema.MeasurementDecls,
        schema.MeasurementDecl,
        schema.ProviderEntry,
        schema.TrialLine,
        schema.ClockGates,
        schema.RequestLine,
        schema.CountsLine,
        schema.ReliabilityLine,
        schema.OperationCounts,
        schema.Trailer,
    ]


def _pattern_name(pattern: str) -> str:
    from boxbench.rawdata import schema

    for name, words in NAMES.items():
        if getattr(schema, f"{name}_PATTERN") == pattern:
            return words
    return f"matches `{pattern}`"


def describe(kind) -> tuple[str, list[str]]:
    """(the type in words, its rules) of a msgspec type."""
    if isinstance(kind, mi.Metadata):
        return describe(kind.type)
    if isinstance(kind, mi.UnionType):
        parts = [describe(t) for t in kind.types if not isinstance(t, mi.NoneType)]
        nullable = len(parts) < len(kind.types)
        words = " or ".join(p[0] for p in parts) + (" or null" if nullable else "")
        return words, [rule for p in parts for rule in p[1]]
    if isinstance(kind, mi.StrType):
        rules = []
        if kind.pattern:
            rules.append(_pattern_name(kind.pattern))
        if kind.max_length is not None:
            rules.append(f"at most {kind.max_length} characters")
        return "string", rules
    if isinstance(kind, mi.IntType):
        low = "" if kind.ge is None else f"{kind.ge:,}"
        high = "" if kind.le is None else f"{kind.le:,}"
        if low and high:
            return "integer", [f"{low} to {high}"]
        return "integer", [f"at least {low}"] if low else []
    if isinstance(kind, mi.FloatType):
        low = "" if kind.ge is None else f"{kind.ge:g}"
        high = "" if kind.le is None else f"{kind.le:g}"
        if low and high:
            return "number", [f"{low} to {high}"]
        return "number", [f"at least {low}"] if low else []
    if isinstance(kind, mi.LiteralType):
        return "string", ["one of " + ", ".join(f"`{v}`" if v else '`""`' for v in kind.values)]
    if isinstance(kind, mi.DateTimeType):
        return "time", ["RFC 3339 with a zone; years 1 to 9999 in UTC"]
    if isinstance(kind, mi.UUIDType):
        return "UUID", []
    if isinstance(kind, mi.BoolType):
        return "boolean", []
    if isinstance(kind, mi.ListType):
        item, rules = describe(kind.item_type)
        return f"list of {item}", rules
    if isinstance(kind, mi.DictType):
        key, key_rules = describe(kind.key_type)
        value, value_rules = describe(kind.value_type)
        if isinstance(kind.value_type, mi.AnyType):
            return "object", [f"keys: {r}" for r in key_rules]
        return f"object of {value}", [f"keys: {r}" for r in key_rules] + value_rules
    if isinstance(kind, mi.StructType):
        return f"object: `{kind.cls.__name__}`", []
    if isinstance(kind, mi.AnyType):
        return "any JSON", []
    return type(kind).__name__, []


def _description(kind) -> str:
    if isinstance(kind, mi.Metadata) and kind.extra_json_schema:
        return kind.extra_json_schema.get("description", "")
    return ""


def render() -> str:
    sections = []
    for struct in _structs():
        info = mi.type_info(struct)
        lines = [f"### `{struct.__name__}`", "", struct.__doc__.strip(), ""]
        lines += ["| field | type | rules | meaning |", "| --- | --- | --- | --- |"]
        if info.tag_field:
            lines.append(f"| `{info.tag_field}` | string | `{info.tag}` | What the line is. |")
        for field in info.fields:
            words, rules = describe(field.type)
            if not field.required:
                rules = [*rules, "optional"]
            rule_text = "; ".join(rules)
            lines.append(f"| `{field.name}` | {words} | {rule_text} | {_description(field.type)} |")
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


def with_tables(text: str, tables: str) -> str:
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return f"{text[:start]}\n\n{tables}\n\n{text[end:]}"


def write():
    DOC.write_text(with_tables(DOC.read_text(), render()))
