"""Provider credentials: read from the environment or from a file named by `<NAME>_FILE`.

Nothing else may hold a credential: not the database, the run manifest, trial evidence, logs or
downloads. Adapters keep the value in memory, send it only as a request header (or the SDK's own
setting), and never put it in an error message; `redact` strips it from any text that could
echo it back (a provider's error body, say).
"""

from __future__ import annotations

import os
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


def redact(text: str, *secrets: str | None) -> str:
    """`text` with every secret replaced, for messages built from a provider's answer."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return text
