"""Number formatting shared by pages, charts and CSV downloads, so a CSV cell is exactly the
text shown on the page."""

import json
import math
from decimal import ROUND_HALF_UP, Decimal

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def num(value) -> str:
    """A measured value: one decimal from 100 up, else four significant digits; "" when absent."""
    if value is None or value == "":
        return ""
    value = float(value)
    if not math.isfinite(value):
        return ""
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.4g}"


def fixed(value: float | None, places: int) -> str:
    """`value` with `places` decimals, rounded as Django's floatformat rounds (half up, from
    the float's shortest repr), without its localization machinery: a comparison page formats
    hundreds of these per render. "" when absent."""
    if value is None or not math.isfinite(value):
        return ""
    text = format(Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP), "f")
    # floatformat writes a value that rounds to zero without its sign.
    return text[1:] if text.startswith("-") and not Decimal(text) else text


@register.filter
def score(value) -> str:
    """A score from 0 to 100, one decimal."""
    if value is None:
        return ""
    return f"{float(value):.1f}"


@register.filter
def usd(value) -> str:
    """A cost in USD with six significant digits (per-second prices are tiny), written out in
    full: "0.0000343561", never "3.43561e-05", which readers misread."""
    if value is None:
        return ""
    return format(Decimal(f"{float(value):.6g}"), "f")


@register.filter
def percent(value) -> str:
    """A share from 0 to 1 as a percentage with one decimal ("" when absent): failure rates."""
    if value is None:
        return ""
    return f"{float(value) * 100:.1f} %"


@register.filter
def pretty_json(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


@register.filter
def get(mapping, key):
    """mapping[key] in a template, None when absent."""
    if not isinstance(mapping, dict):
        return None
    return mapping.get(key)


@register.filter
def short(digest) -> str:
    """The first 12 hex digits of a digest (the full value is in the title attribute)."""
    text = str(digest or "")
    return text.split(":", 1)[-1][:12]


@register.filter
def ticks(text) -> str:
    """A title with Markdown code spans (`true`) shown as code, never as raw backticks."""
    parts = str(text or "").split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: show the text without it
        return conditional_escape("".join(parts))
    return mark_safe(
        "".join(
            f"<code>{conditional_escape(p)}</code>" if i % 2 else conditional_escape(p)
            for i, p in enumerate(parts)
        )
    )


@register.filter
def plain(text) -> str:
    """A title without backticks, for places that cannot hold markup (<title>, attributes)."""
    return str(text or "").replace("`", "")


CLOCKS = {"job_host": "timed from the job host", "guest": "timed by the sandbox's own clock"}


@register.filter
def clock_words(clock) -> str:
    """A benchmark's clock as a reader says it (the id stays in CSV and API)."""
    return CLOCKS.get(str(clock), f"clock {clock}")


# The settings' stand-ins when the operator names no job host type or region.
UNNAMED = "unnamed"
NOT_RECORDED = "not recorded"  # a board's job-host series a run did not record


@register.filter
def host_type(text) -> str:
    """A job host type without the stand-in word: "x86_64 machine, 2 CPUs"."""
    words = str(text or "")
    return words.removeprefix(f"{UNNAMED} ") or "not recorded"


@register.filter
def in_region(region) -> str:
    """ " in region us-east-1", or " (no region set)" for the stand-in."""
    region = str(region or "")
    if region == NOT_RECORDED:
        return f" (region {NOT_RECORDED})"
    return " (no region set)" if region in ("", UNNAMED) else f" in region {region}"


# A provider's declared region where it is a word, not a place
# (runner/provider_declarations/*.yaml).
PROVIDER_REGIONS = {
    "local": "runs on the job host itself (no cloud region)",
    "remote": "runs on a host you control, reached over the network",
    "default": "runs in the provider's default region",
    "aws-region": "runs in the AWS region the client names",
}


@register.filter
def provider_region(region) -> str:
    """Where a provider's sandboxes run, as a reader says it: "region us-east-1", or the words
    for a declared region that is not a place ("local")."""
    region = str(region or "")
    if not region:
        return "region not declared"
    return PROVIDER_REGIONS.get(region, f"region {region}")


@register.filter
def run_title(name) -> str:
    """A run's heading: "Run nightly", but "Run 2026-12-07 13:21" for a run named "run 2026-...",
    never "Run run"."""
    name = str(name or "")
    return name[:1].upper() + name[1:] if name.lower().startswith("run ") else f"Run {name}"


@register.filter
def word(value) -> str:
    """A stored word (`provider_failure`) as a reader says it ("Provider failure")."""
    return str(value or "").replace("_", " ").capitalize()


@register.filter
def refusal_status(code) -> str:
    """A planning refusal's code (R401) as the status label the boards show (Not Supported)."""
    from runner.rules import REFUSAL_DISPLAY_LABELS

    return REFUSAL_DISPLAY_LABELS.get(str(code), str(code))
