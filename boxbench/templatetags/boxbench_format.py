"""Number formatting shared by pages, charts and CSV downloads, so a CSV cell is exactly the
text shown on the page."""

import json
import math

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


@register.filter
def score(value) -> str:
    """A score from 0 to 100, one decimal."""
    if value is None:
        return ""
    return f"{float(value):.1f}"


@register.filter
def usd(value) -> str:
    """A cost in USD with six significant digits (per-second prices are tiny)."""
    if value is None:
        return ""
    return f"{float(value):.6g}"


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
