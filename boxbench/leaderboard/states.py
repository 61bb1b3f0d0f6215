"""What a board says about one provider whatever its numbers: who it is (name, region marker,
chart colour), whether it sources its own cost, and the facts its status label is decided from
(stats.labels)."""

from __future__ import annotations

from boxbench.leaderboard import shapes
from boxbench.models import Clock, Provider
from runner import host_price
from stats import labels

# Which ProviderState flag (stats.labels) a refusal code sets on the leaderboard.
REFUSAL_STATUS_FLAGS = {
    "R401": "refused_capability",
    "R402": "not_offered",
    "R403": "account_limit",
    "R404": "known_fault",
}


def provider_cost(provider: Provider) -> bool:
    return bool((provider.pricing or {}).get("provider_sourced"))


def known_fault(provider: Provider, benchmark: str) -> str | None:
    """The note of a known fault the provider's stored declaration records for `benchmark`."""
    faults = (provider.declaration or {}).get("known_faults") or {}
    note = faults.get(benchmark) if isinstance(faults, dict) else None
    return str(note) if note else None


def provider_state(
    provider, refusals, successes, floor, failures, benchmark="", **view
) -> labels.ProviderState:
    refusal = refusals.get(provider.slug)
    flag = REFUSAL_STATUS_FLAGS.get(refusal.code) if refusal else None
    missing = (refusal.missing or refusal.code) if refusal else "refused"
    fault = known_fault(provider, benchmark)
    if flag == "known_fault":
        fault = fault or str(refusal.missing or refusal.message or "known fault")
    if view.get("view_needs_provider_cost") and provider.slug in host_price.SELF_HOSTED:
        # Reader words; which setting would price the host is the operator's (staff only).
        view.setdefault("no_cost_reason", "Self-hosted: no provider price.")
    return labels.ProviderState(
        known_fault=fault,
        successes=successes,
        ranking_floor=floor,
        unreplaced_provider_failures=failures,
        refused_capability=str(missing) if flag == "refused_capability" else None,
        not_offered=flag == "not_offered",
        account_limit=flag == "account_limit",
        **view,
    )


def provider_info(provider: Provider, clock: str = Clock.JOB_HOST) -> shapes.ProviderInfo:
    """`clock`: the one the shown metric was timed by. The region marker warns of a far region's
    network path from the job host, so it marks only metrics timed from the job host."""
    return {
        "provider": provider.slug,
        "provider_name": provider.name,
        "region_marker": provider.region_marker if clock == Clock.JOB_HOST else "",
        "region_note": provider.region_note,
        # The provider's chart colour (boxbench.charts.provider_colour): its registration order,
        # so it never changes with the set of providers on a page.
        "colour_index": provider.pk - 1,
    }
