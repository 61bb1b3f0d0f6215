"""An Atom feed per provider (/providers/<slug>/feed.xml): its publications, one entry per
published run and benchmark, and the flagged changes between runs of a results series, read from
the materialized history pages and cached per publication like the pages."""

from datetime import datetime

from django.conf import settings
from django.http import HttpResponse
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed

from boxbench.models import Aggregate, Scope
from boxbench.views.access import aggregate

ENTRIES = 100  # the newest; a reader that polls less often than this many publications misses some


def provider_entries(slug: str) -> list[dict]:
    """{"title", "link", "when", "id", "text"} of the provider's publications and flagged
    changes, the newest first."""
    entries: dict[str, dict] = {}
    for history in Aggregate.objects.filter(scope=Scope.HISTORY).values_list("data", flat=True):
        benchmark = history["benchmark"]
        for series in history["series"]:
            if series["provider"] != slug:
                continue
            published = {p["run"]: p["published_at"] for p in series["points"]}
            for run, when in published.items():
                name = next(p["run_name"] for p in series["points"] if p["run"] == run)
                entries[f"run/{run}/{benchmark}"] = {
                    "title": f"{history['title']}: results published from run {name}",
                    "link": reverse("run", args=[run]),
                    "when": when,
                    "id": f"run/{run}/{benchmark}",
                    "text": f"{series['provider_name']} on {history['title']}, image "
                    f"{series['image_digest'] or 'not recorded'}.",
                }
            for change in series["changes"]:
                if change["flagged"]:
                    key = f"change/{change['later_run']}/{benchmark}/{change['unit']}"
                    entries[key] = {
                        "title": f"Change: {change['text']}",
                        "link": reverse("benchmark", args=[benchmark]) + "#history",
                        "when": published[change["later_run"]],
                        "id": key,
                        "text": f"{series['provider_name']}: median {change['median_earlier']} "
                        f"-> {change['median_later']} {history['measure_unit']}.",
                    }
    return sorted(entries.values(), key=lambda e: (e["when"], e["id"]), reverse=True)[:ENTRIES]


def absolute(path: str) -> str:
    """An address on the configured site (settings.SITE_URL): the feed is cached and served to
    everyone, so its links never come from the Host header of whoever asked first."""
    return settings.SITE_URL.rstrip("/") + path


def provider_feed(request, slug):
    provider = aggregate(Scope.PROVIDER, slug)
    feed = Atom1Feed(
        title=f"boxbench: {provider['provider_name']}",
        link=absolute(reverse("provider", args=[slug])),
        description=f"Publications and flagged changes of {provider['provider_name']}.",
        feed_url=absolute(request.path),
    )
    for entry in provider_entries(slug):
        when = datetime.fromisoformat(entry["when"])
        feed.add_item(
            title=entry["title"],
            link=absolute(entry["link"]),
            description=entry["text"],
            unique_id=f"tag:boxbench,{entry['id']}",
            pubdate=when,
            updateddate=when,
        )
    return HttpResponse(feed.writeString("utf-8"), content_type="application/atom+xml")
