"""Text on its way to a terminal: control and bidirectional characters shown, not obeyed.

Names in an imported file, a provider's answer or a trace can hold escape sequences (which
rewrite the screen or the window title) or bidirectional overrides (which reorder what is
shown, so `cause` reads as something else). Every `bench` line and error goes through
`printable`, which writes such a character as a `\\uXXXX` escape. Newlines and tabs stay.
"""

from __future__ import annotations

import unicodedata

from django.core.management.base import CommandError

_KEPT = {"\n", "\t"}


def _shown(char: str) -> str:
    if char in _KEPT:
        return char
    # Cc: C0 and C1 controls (ESC, CSI, BEL, DEL...); Cf: format characters, which hold the
    # bidirectional embeddings, overrides and isolates and the zero-width ones; Zl, Zp: the
    # line and paragraph separators some terminals break lines at.
    if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return char


def printable(text: str) -> str:
    if text.isprintable():  # the common case, at C speed
        return text
    return "".join(_shown(char) for char in text)


class Output:
    """A management command's stdout whose every write is made printable first."""

    def __init__(self, inner):
        self._inner = inner

    def write(self, msg: str = "", style_func=None, ending=None):
        self._inner.write(printable(msg), style_func, ending)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def printable_error(error: CommandError) -> CommandError:
    return CommandError(printable(str(error)), returncode=error.returncode)
