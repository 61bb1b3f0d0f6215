"""The API's human-readable reference (/api/v1/docs/), read from its OpenAPI description
(boxbench.api_schema.openapi): the endpoints with their parameters and answers, then every
schema with its fields, each type in words and a schema's name linked to its entry. Built from
the same description the machines read, so the two cannot disagree. Pure: no Django.
"""

from __future__ import annotations

REF_PREFIX = "#/components/schemas/"
SCALARS = {
    "string": "text",
    "integer": "integer",
    "number": "number",
    "boolean": "true or false",
    "null": "null",
}

# One piece of a type in words: (text, schema it links to or "").
Piece = tuple[str, str]


def type_pieces(schema: dict) -> list[Piece]:
    """A JSON Schema type in words ("array of CompareRow", "number or null"), in pieces so the
    page can link each schema's name to its entry."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(REF_PREFIX)
        return [(name, name)]
    if "anyOf" in schema:
        return _joined([type_pieces(s) for s in schema["anyOf"]], " or ")
    if "enum" in schema:
        return [("one of " + ", ".join(_literal(v) for v in schema["enum"]), "")]
    if "const" in schema:
        return [(_literal(schema["const"]), "")]
    kind = schema.get("type")
    if kind == "array":
        if "prefixItems" in schema:
            items = _joined([type_pieces(s) for s in schema["prefixItems"]], ", ")
            return [("list of (", ""), *items, (")", "")]
        return [("array of ", ""), *type_pieces(schema.get("items", {}))]
    if kind == "object":
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            return [("object of text to ", ""), *type_pieces(values)]
        return [("object", "")]
    if isinstance(kind, list):
        return _joined([type_pieces({"type": k}) for k in kind], " or ")
    if isinstance(kind, str):
        return [(SCALARS.get(kind, kind), "")]
    return [("any JSON value", "")]


def _joined(parts: list[list[Piece]], sep: str) -> list[Piece]:
    out: list[Piece] = []
    for i, pieces in enumerate(parts):
        if i:
            out.append((sep, ""))
        out += pieces
    return out


def _literal(value) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def reference(description: dict) -> dict:
    """{"title", "version", "description", "endpoints": [...], "schemas": [...]} for the page:
    each endpoint with its path, summary, parameters and answer type; each schema with its
    fields (name, type pieces, required, description), in the order the description lists."""
    schemas = description.get("components", {}).get("schemas", {})
    endpoints = []
    for path, methods in description.get("paths", {}).items():
        for method, operation in methods.items():
            answer = (
                operation.get("responses", {})
                .get("200", {})
                .get("content", {})
                .get("application/json", {})
                .get("schema", {})
            )
            endpoints.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "anchor": "endpoint-" + _anchor(path),
                    "summary": operation.get("summary", ""),
                    "parameters": [
                        {
                            "name": p["name"],
                            "where": p["in"],
                            "required": bool(p.get("required")),
                            "type": type_pieces(p.get("schema", {})),
                        }
                        for p in operation.get("parameters", [])
                    ],
                    "answer": type_pieces(answer),
                    "errors": sorted(
                        (code, r.get("description", ""))
                        for code, r in operation.get("responses", {}).items()
                        if code != "200"
                    ),
                }
            )
    return {
        "title": description.get("info", {}).get("title", ""),
        "version": description.get("info", {}).get("version", ""),
        "description": description.get("info", {}).get("description", ""),
        "endpoints": endpoints,
        "schemas": [_schema(name, schema) for name, schema in schemas.items()],
    }


def _schema(name: str, schema: dict) -> dict:
    required = set(schema.get("required", []))
    return {
        "name": name,
        "description": " ".join(schema.get("description", "").split()),
        "kind": "" if "properties" in schema else type_pieces(schema),
        "fields": [
            {
                "name": field,
                "type": type_pieces(spec),
                "required": field in required,
                "description": " ".join(spec.get("description", "").split()),
            }
            for field, spec in schema.get("properties", {}).items()
        ],
    }


def _anchor(path: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in path).strip("-") or "index"
