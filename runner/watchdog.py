"""Calls that may hang, run under a time limit: the lifecycle's create, snapshot, procedure
and destroy steps, each timed from adapter entry inside its own thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class Overran(Exception):
    """A call did not return within its limit; it may still be running in its thread."""


@dataclass
class LimitedCall:
    value: Any = None
    error: BaseException | None = None
    started: float | None = None  # monotonic, at adapter entry
    returned: float | None = None

    @property
    def elapsed_s(self) -> float:
        """Adapter entry to return; both are set once the call has ended (no overrun)."""
        assert self.started is not None and self.returned is not None, "the call has not ended"
        return self.returned - self.started


def call_with_limit(
    call: Callable[[], Any],
    limit_s: float,
    name: str,
    on_end: Callable[[LimitedCall], None] | None = None,
) -> LimitedCall:
    """Run `call` in a daemon thread, timed inside it; raise Overran after `limit_s`.

    The outcome (value or error) is returned, not raised. `on_end` runs in the thread when the
    call ends, even after an overrun, so a late result (a sandbox) can still be cleaned up.
    """
    box = LimitedCall()
    thread = threading.Thread(
        target=lambda: _run_into(box, call, on_end), name=f"trial-{name}", daemon=True
    )
    thread.start()
    thread.join(limit_s)
    if thread.is_alive():
        raise Overran(f"{name} did not return within its {limit_s:g} s limit")
    return box


def call_here(call: Callable[[], Any], on_end: Callable[[LimitedCall], None]) -> LimitedCall:
    """Run `call` in the calling thread, timed and handed to `on_end` as call_with_limit does,
    without its limit: for callers on threads of their own that bound the wait themselves."""
    box = LimitedCall()
    _run_into(box, call, on_end)
    return box


def _run_into(box: LimitedCall, call, on_end) -> None:
    box.started = time.monotonic()
    try:
        box.value = call()
    except BaseException as exc:  # noqa: B036, BLE001 - handed to the caller's thread
        box.error = exc
    finally:
        box.returned = time.monotonic()
        if on_end is not None:
            on_end(box)
