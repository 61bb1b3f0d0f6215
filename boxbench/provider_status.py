"""Whether each provider is configured here: the doctor's checks (`bench doctor`), one verdict
per provider, for the command and for the admin's start form alike."""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass

from runner.declarations import load_all
from runner.providers import get_provider
from runner.providers.base import DoctorCheck

# The start form waits this long for every provider's doctor at once (the cloud ones ask their
# API); a provider that has not answered by then is shown as unknown, not as broken.
FORM_WAIT_S = 8.0


def provider_checks(slug: str, declaration) -> list[DoctorCheck]:
    """The doctor's checks of one provider; a broken adapter is one failed check."""
    try:
        return get_provider(slug, declaration).doctor()
    except Exception as exc:  # noqa: BLE001 - a broken adapter is a failed check
        return [DoctorCheck("adapter", False, f"{type(exc).__name__}: {exc}")]


@dataclass(frozen=True)
class Verdict:
    state: str  # "configured", "not configured", "failing", "unknown"
    detail: str

    @property
    def ready(self) -> bool:
        return self.state == "configured"


def verdict(checks: list[DoctorCheck]) -> Verdict:
    failed = [c for c in checks if not c.ok]
    if failed:
        return Verdict("failing", "; ".join(f"{c.name}: {c.detail}" for c in failed))
    skipped = [c for c in checks if c.skipped]
    if skipped:
        return Verdict("not configured", "; ".join(c.detail for c in skipped))
    return Verdict("configured", "; ".join(f"{c.name}: {c.detail}" for c in checks) or "ready")


def verdicts(wait_s: float = FORM_WAIT_S) -> dict[str, Verdict]:
    """{provider slug: Verdict} for every declared provider, asked in parallel."""
    declarations = load_all()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(len(declarations), 1))
    futures = {
        slug: pool.submit(provider_checks, slug, declaration)
        for slug, declaration in declarations.items()
    }
    concurrent.futures.wait(futures.values(), timeout=wait_s)
    pool.shutdown(wait=False, cancel_futures=True)
    found = {}
    for slug, future in futures.items():
        if future.done() and not future.cancelled():
            found[slug] = verdict(future.result())
        else:
            found[slug] = Verdict("unknown", f"its doctor did not answer within {wait_s:g} s")
    return found
