"""Characters an imported name or text may not hold: control characters (Unicode category Cc),
format characters (Cf: the bidi overrides and isolates, zero-width characters), and the line and
paragraph separators (Zl, Zp). Rendered on a page, a CSV or a chart, they reorder, hide or break
what is shown (a provider named with U+202E reads backwards). Free text (a trial's cause, a
benchmark's description, a region note) may keep line breaks and tabs, since a cause quotes an
error message.

Only the typed fields of the format are read: the free-form objects (manifest, definitions,
declarations, probes) are shown as escaped JSON and keep the NUL check alone (checks.py).
"""

import unicodedata

import msgspec

REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
FREE_TEXT = frozenset({"cause", "description", "region_note"})
KEPT_IN_FREE_TEXT = frozenset("\n\t")
# Free-form JSON objects: not names or texts the pages render as such.
OBJECTS = frozenset(
    {"manifest", "audit_report", "definition", "declaration", "pricing", "placement", "host_load"}
)


def refused_character(text: str, free: bool = False) -> str | None:
    """The first refused character of `text`, or None."""
    if text.isprintable():  # the common case, in C: no Cc, Cf, Zl or Zp at all
        return None
    for char in text:
        if unicodedata.category(char) in REFUSED_CATEGORIES and not (
            free and char in KEPT_IN_FREE_TEXT
        ):
            return char
    return None


def find_refused(value, path: str = "", free: bool = False) -> tuple[str, str] | None:
    """(field path, character) of the first string of a decoded line, or key of one of its
    typed mappings, holding a refused character; None when there is none."""
    if isinstance(value, str):
        char = refused_character(value, free)
        return (path, char) if char else None
    if isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            if name in OBJECTS:
                continue
            found = find_refused(getattr(value, name), _join(path, name), name in FREE_TEXT)
            if found:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            where = _join(path, str(key))
            char = refused_character(key) if isinstance(key, str) else None
            if char:
                return f"{where} (a key)", char
            found = find_refused(item, where)
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = find_refused(item, f"{path}[{i}]")
            if found:
                return found
    return None


def describe(char: str) -> str:
    name = unicodedata.name(char, "unnamed")
    category = unicodedata.category(char)
    return (
        f"contains U+{ord(char):04X} ({name}, category {category}): control, format and bidi "
        "characters are refused"
    )


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
