"""What the score tree says about sections nobody scored, and how many sections the Overall
averages, in a reader's words. The Overall keeps the methodology's computation (the mean of the
four section scores, a section without a result adding 0); these words only say so. Pure: no
Django.
"""

from __future__ import annotations

from boxbench.leaderboard import shapes
from stats.scores import SECTIONS

WHY_NOT_SCORED = {
    "workload_cost": "no provider has a provider-sourced cost on a workload (a self-hosted "
    "provider has no provider price)",
}
NO_BENCHMARK = "no benchmark of this section is published"
NO_RESULT = "no provider has a ranked result in it"


def section_notes(tree: shapes.ScoreNode) -> shapes.SectionNotes:
    """{"unscored": {section key: why nobody scored it}, "overall": how the Overall averages}."""
    unscored = {}
    for section in tree["children"]:
        if section["scores"]:
            continue
        if not section["children"]:
            unscored[section["key"]] = f"not scored: {NO_BENCHMARK}"
        else:
            why = WHY_NOT_SCORED.get(section["key"], NO_RESULT)
            unscored[section["key"]] = f"not scored: {why}"
    return {"unscored": unscored, "overall": overall_words(tree, list(unscored))}


def overall_words(tree: shapes.ScoreNode, unscored: list[str]) -> str:
    count = len(SECTIONS)
    if not unscored:
        return f"mean of all {count} sections"
    labels = {s["key"]: s["label"] for s in tree["children"]}
    names = ", ".join(labels.get(key, key) for key in unscored)
    scored = count - len(unscored)
    return (
        f"mean of {count} sections, {scored} of them scored: {names} nobody scored, so it adds "
        f"0 for every provider (at most {100 * scored / count:.0f} of 100)"
    )
