"""Published runs made from the web fixture for the history tests: each a day apart, jittered,
with chosen pairs slowed."""

import json
import uuid
from datetime import datetime, timedelta

import numpy as np
from django.core.management import call_command

from boxbench import publishing
from boxbench.models import Run
from tests.support.web import explain_failures
from tests.web import factory


def variant(path, number: int, slower: dict | None = None, standard_digest: str | None = None):
    """The fixture run as run `number`: new ids, a day later per number, each value jittered by
    1 % (seeded), the (provider, benchmark) pairs in `slower` slowed by their factor."""
    rng = np.random.default_rng(100 + number)
    header, *trials = (json.loads(line) for line in factory.run_lines())
    # The number leads the id: runs hold distinct label digits (runner/labels.py).
    run_id = str(uuid.UUID(int=number << 96, version=4))
    header["run"]["id"], header["run"]["name"] = run_id, f"run-{number}"
    for key in ("created_at", "started_at", "ended_at"):
        moment = datetime.fromisoformat(header["run"][key].replace("Z", "+00:00"))
        header["run"][key] = (moment + timedelta(days=number)).isoformat().replace("+00:00", "Z")
    if standard_digest:
        header["manifest"]["image_digests"]["standard"] = standard_digest
    for trial in trials:
        trial["trial"] = str(uuid.UUID(int=number * 10**6 + trial["seq"]))
        for key in ("started_at", "ended_at"):
            moment = datetime.fromisoformat(trial[key].replace("Z", "+00:00"))
            trial[key] = (moment + timedelta(days=number)).isoformat().replace("+00:00", "Z")
        factor = (slower or {}).get((trial["provider"], trial["benchmark"]), 1.0)
        if "total" in trial["metrics"]:
            trial["metrics"]["total"] = round(
                trial["metrics"]["total"] * factor * rng.lognormal(0, 0.01), 3
            )
    path.write_text("\n".join(json.dumps(line) for line in [header, *trials]) + "\n")
    call_command("bench", "import", str(path))
    run = Run.objects.get(id=run_id)
    explain_failures(run)
    return publishing.publish(run)
