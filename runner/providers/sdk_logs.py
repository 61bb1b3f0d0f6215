"""Credentials kept out of a provider SDK's own log records.

An official SDK logs its failures with the provider's answer in them (OpenSandbox's: WARNING
with the server's message for a failed call, ERROR with the traceback for a failed command or
file call), and a provider may echo a key into that answer. Those records reach whatever handlers
the process has, so every logger of the SDK's package gets a filter that rewrites a record's
message and traceback with the registered credentials removed before any handler sees it.

A filter on a parent logger does not see its children's records, so the filter goes on each
module's logger: they are created here for every module file of the package (the SDK's
`logging.getLogger(__name__)` then returns the same object), including modules it imports only
later. No Django imports.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from pathlib import Path

from runner.providers.credentials import redact


class _Redacting(logging.Filter):
    def __init__(self):
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = tuple(self.secrets)
        message = record.getMessage()
        cleaned = redact(message, *secrets)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info:
            # Formatted here, once, so the traceback's exception messages can be cleaned too.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        if record.exc_text:
            record.exc_text = redact(record.exc_text, *secrets)
        return True


_filters: dict[str, _Redacting] = {}
_lock = threading.Lock()


def redact_sdk_logs(package: str, *secrets: str | None) -> None:
    """Remove `secrets` from every log record of `package` (an installed package's name)."""
    with _lock:
        found = _filters.get(package)
        if found is None:
            found = _filters[package] = _Redacting()
            for name in _module_names(package):
                logging.getLogger(name).addFilter(found)
        found.secrets.update(s for s in secrets if s and len(s) >= 4)


def _module_names(package: str) -> list[str]:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return [package]
    names = [package]
    for location in spec.submodule_search_locations:
        root = Path(location)
        for path in root.rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts:
                names.append(".".join((package, *parts)))
    return names
