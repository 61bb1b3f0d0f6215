"""boxbench's own record of what it created, for a provider that cannot list it by label.

Modal lists no images by label, so its adapter appends a line to
`<var>/ledgers/modal-snapshots.jsonl` when a snapshot is made (id, batch label, creation and
expiry time) and another when it is confirmed deleted; `bench cleanup` lists the entries never
confirmed and deletes them. Appends are single `write` calls on a file opened with O_APPEND, so
concurrent workers (threads or processes) never interleave lines. The ledger holds no credential."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path


@dataclass(frozen=True)
class LedgerEntry:
    id: str
    label: str
    created_at: datetime
    expires_at: datetime | None


class Ledger:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()

    @classmethod
    def for_provider(cls, slug: str, directory: str | Path | None = None) -> Ledger:
        if directory is None:
            from django.conf import settings

            directory = Path(settings.VAR_DIR) / "ledgers"
        return cls(Path(directory) / f"{slug}.jsonl")

    def created(self, sandbox_id: str, label: str, created_at: datetime, lifetime_s: float) -> None:
        expires = created_at.timestamp() + lifetime_s
        self._append(
            {
                "event": "created",
                "id": sandbox_id,
                "label": label,
                "at": created_at.isoformat(),
                "expires_at": expires,
            }
        )

    def stopped(self, sandbox_id: str) -> None:
        self._append({"event": "stopped", "id": sandbox_id, "at": datetime.now(UTC).isoformat()})

    def open_entries(self) -> list[LedgerEntry]:
        """Sandboxes created and never confirmed stopped, oldest first."""
        entries: dict[str, LedgerEntry] = {}
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut short by a crash mid-write: nothing to recover from it
            if record.get("event") == "created":
                expires = record.get("expires_at")
                entries[record["id"]] = LedgerEntry(
                    id=record["id"],
                    label=record.get("label", ""),
                    created_at=datetime.fromisoformat(record["at"]),
                    expires_at=datetime.fromtimestamp(expires, UTC) if expires else None,
                )
            elif record.get("event") == "stopped":
                entries.pop(record.get("id"), None)
        return sorted(entries.values(), key=lambda e: e.created_at)

    def _append(self, record: dict) -> None:
        line = (json.dumps(record, sort_keys=True) + "\n").encode()
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
