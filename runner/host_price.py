"""The price an operator declares for a self-hosted provider's machine.

`local` and `docker` run on the job host and `remote-docker` on an engine host someone pays for,
but their declarations carry no bill of their own (rates of zero, not provider-sourced), so no
cost view can rank them. An operator who knows what the machine costs (say the on-demand hourly
price of its instance type) declares it in the environment, with where the price comes from and
its date; the declaration's pricing is then that price, shared among the host's vCPUs (a sandbox
of 2 vCPUs on an 8-vCPU host costs a quarter of the host's hour), marked provider-sourced, and its
source says it is the operator's declaration. Without one, the pricing stays as declared and the
views that need a cost say which setting would fill it (`setting_hint`).
"""

from __future__ import annotations

import datetime
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class HostPriceSettings:
    prefix: str  # PREFIX_PER_HOUR, PREFIX_SOURCE, PREFIX_DATE
    cpus_variable: str  # the host's vCPUs, among which its price is shared
    host: str  # what the machine is, in the pricing's source line


JOB_HOST = HostPriceSettings("BOXBENCH_HOST_PRICE", "BOXBENCH_JOB_HOST_CPUS", "the job host")
REMOTE_HOST = HostPriceSettings(
    "BOXBENCH_REMOTE_DOCKER_PRICE", "BOXBENCH_REMOTE_DOCKER_PRICE_CPUS", "the remote engine host"
)
SELF_HOSTED = {"local": JOB_HOST, "docker": JOB_HOST, "remote-docker": REMOTE_HOST}


# Above the hourly price of any cloud machine (the largest cost a few hundred USD): a larger
# figure is a typo or a unit mistake, and 1e308 made every cost infinite.
MAX_PER_HOUR = 10_000


class HostPriceError(ValueError):
    """A host price setting is malformed or incomplete; the message names the variable."""


def setting_hint(provider: str) -> str:
    """What would give `provider` a cost, or "" for a provider priced by its own bill."""
    found = SELF_HOSTED.get(provider)
    if found is None:
        return ""
    return (
        f"Set {found.prefix}_PER_HOUR (with {found.prefix}_SOURCE and {found.prefix}_DATE) to "
        f"price {found.host} this provider runs on."
    )


def _number(env: Mapping[str, str], name: str, *, positive: bool) -> float:
    text = env.get(name, "").strip()
    try:
        value = float(text)
    except ValueError:
        raise HostPriceError(f"{name}={text!r} is not a number") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        wanted = "positive" if positive else ">= 0"
        raise HostPriceError(f"{name}={text!r} must be a {wanted} number")
    return value


def declared_pricing(provider: str, env: Mapping[str, str] | None = None) -> dict | None:
    """The pricing the operator declared for `provider`'s host, or None when none is set."""
    env = os.environ if env is None else env
    found = SELF_HOSTED.get(provider)
    if found is None or not env.get(f"{found.prefix}_PER_HOUR", "").strip():
        return None
    # A price of 0 would make every cost 0, which no cost score can rank (a geometric mean).
    per_hour = _number(env, f"{found.prefix}_PER_HOUR", positive=True)
    if per_hour > MAX_PER_HOUR:
        raise HostPriceError(
            f"{found.prefix}_PER_HOUR={per_hour:g} is above {MAX_PER_HOUR:,} USD per hour, "
            "more than any machine costs: write the price of one hour in USD"
        )
    source = env.get(f"{found.prefix}_SOURCE", "").strip()
    if not source:
        raise HostPriceError(
            f"{found.prefix}_SOURCE is unset: say where {found.prefix}_PER_HOUR comes from "
            "(e.g. the provider's on-demand price page for the instance type)"
        )
    date_text = env.get(f"{found.prefix}_DATE", "").strip()
    try:
        date = datetime.date.fromisoformat(date_text)
    except ValueError:
        raise HostPriceError(
            f"{found.prefix}_DATE={date_text!r} must be the price's date (YYYY-MM-DD)"
        ) from None
    if found.cpus_variable in env and env[found.cpus_variable].strip():
        cpus = _number(env, found.cpus_variable, positive=True)
    elif found is JOB_HOST:
        cpus = float(os.cpu_count() or 1)
    else:
        raise HostPriceError(f"{found.cpus_variable} is unset: the remote host's vCPUs")
    return {
        "provider_sourced": True,
        "source": (
            f"Declared by the operator ({found.prefix}_PER_HOUR): {found.host} costs "
            f"${per_hour:g}/h for {cpus:g} vCPUs, shared by vCPU; source: {source}"
        ),
        "date": date.isoformat(),
        "currency": "USD",
        "per_vcpu_second": per_hour / cpus / 3600,
        "per_gib_second": 0.0,
        "per_sandbox": 0.0,
        "billing_increment_s": 1,
        "minimum_s": 0,
    }
