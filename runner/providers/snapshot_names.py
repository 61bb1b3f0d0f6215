"""Names for the snapshots boxbench makes on providers whose snapshot listing carries no labels
(E2B, Daytona): the batch label, the creation time and a random part, so `bench cleanup` can
read the label and age back from a listed name, and two snapshots of one batch never share a
name (E2B gives a name already taken a new build of the same snapshot; Daytona refuses it)."""

from __future__ import annotations

import re
import secrets
import time
from datetime import UTC, datetime

PATTERN = re.compile(r"^(?P<label>.+)-(?P<epoch>[0-9]{10})-[0-9a-f]{6}$")


def make(label: str) -> str:
    """A new snapshot name for the batch `label`."""
    return f"{label}-{int(time.time())}-{secrets.token_hex(3)}"


def read(name: str) -> tuple[str, datetime] | None:
    """(batch label, creation time) of a name `make` gave, or None for any other name."""
    named = PATTERN.match(name)
    if named is None:
        return None
    return named["label"], datetime.fromtimestamp(int(named["epoch"]), UTC)
