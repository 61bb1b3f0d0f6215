"""A provider as every page names it: the keys each row about one provider starts with."""

from __future__ import annotations

from typing import TypedDict


class ProviderInfo(TypedDict):
    provider: str
    provider_name: str
    region_marker: str
    region_note: str
    colour_index: int  # boxbench.charts.provider_colour
