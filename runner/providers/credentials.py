"""Provider credentials: read from the environment or from a file named by `<NAME>_FILE`.

Nothing else may hold a credential: not the database, the run manifest, trial evidence, logs or
downloads. Adapters keep the value in memory, send it only as a request header (or the SDK's own
setting), and never put it in an error message; `redact` strips it from any text that could
echo it back (a provider's error body, say).
"""

from __future__ import annotations

import base64
import os
import urllib.parse
from pathlib import Path

from runner.providers.base import ProviderError


class MissingCredential(ProviderError):
    """The provider is not configured: a required variable is unset or its file is unreadable."""


def credential(name: str, settings: dict | None = None, key: str = "") -> str | None:
    """The value of `name` from adapter settings, the environment, or the file `<name>_FILE`.

    None when none of them is set; MissingCredential when `<name>_FILE` names an unreadable or
    empty file (a configuration mistake worth stopping for, not a missing provider).
    """
    if settings and key and settings.get(key):
        return str(settings[key])
    value = os.environ.get(name, "").strip()
    if value:
        return value
    path = os.environ.get(f"{name}_FILE", "").strip()
    if not path:
        return None
    try:
        value = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise MissingCredential(
            f"{name}_FILE names {path}, which cannot be read: {exc.strerror}", code="unconfigured"
        ) from None
    if not value:
        raise MissingCredential(f"{name}_FILE names {path}, which is empty", code="unconfigured")
    return value


# A run of this many characters of a secret is redacted wherever it appears: a provider that
# echoes a truncated or partly masked key still shows enough of it to matter.
LONG_PIECE = 12


def redact(text: str, *secrets: str | None) -> str:
    """`text` with every secret replaced, for messages built from a provider's answer: the
    secret itself, its URL-encoded and base64 forms (a query string, a Basic header echoed
    back), and any run of LONG_PIECE or more of its characters."""
    for secret in secrets:
        if not secret or len(secret) < 4:
            continue
        for form in sorted(_encoded_forms(secret), key=len, reverse=True):
            text = text.replace(form, "[redacted]")
        text = _redact_pieces(text, secret)
    return text


def _encoded_forms(secret: str) -> set[str]:
    raw = secret.encode()
    forms = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}
    # base64 of the secret at each of the three byte alignments it can have inside a longer
    # value ("user:secret"), without the characters its neighbours share.
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * shift + raw).decode().rstrip("=")
            start = -(-shift * 4 // 3)
            end = len(encoded) - (1 if (shift + len(raw)) % 3 else 0)
            if end - start >= 8:
                forms.add(encoded[start:end])
    return {form for form in forms if len(form) >= 4}


def _redact_pieces(text: str, secret: str) -> str:
    """Replace every run of at least LONG_PIECE characters of `secret` found in `text`."""
    if len(secret) < LONG_PIECE:
        return text
    pieces = {secret[i : i + LONG_PIECE] for i in range(len(secret) - LONG_PIECE + 1)}
    marked = [False] * len(text)
    for i in range(len(text) - LONG_PIECE + 1):
        if text[i : i + LONG_PIECE] in pieces:
            marked[i : i + LONG_PIECE] = [True] * LONG_PIECE
    if not any(marked):
        return text
    out, i = [], 0
    while i < len(text):
        if marked[i]:
            while i < len(text) and marked[i]:
                i += 1
            out.append("[redacted]")
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
