"""Create's unique per-trial layer: an image no earlier create can have cached.

"The Create tests append a unique per-trial layer to a pinned base image." Before the timed create,
untimed: a sandbox of the provider's standard image (its pinned base) gets a file holding a token
unique to the trial, is snapshotted through the provider's own image or template mechanism and
destroyed (kept until cleanup where a snapshot goes with its source: Vercel); the trial's create
then starts from that snapshot with the same call a create from the standard image makes
(`SandboxSpec.layer`). Each adapter names its mechanism
(`Provider.layer_mechanism`): an image commit on docker, a snapshot E2B keeps as a template, a
Daytona snapshot, a Modal image, a Vercel or OpenSandbox snapshot. The snapshot is deleted and
confirmed gone at cleanup like every snapshot, or the trial is not a success.

An adapter that builds no layer is refused Create before the run (it does not declare
`unique_layer`), so no create is measured another way; the one exception is an adapter with no
image at all (`Provider.layer_needless`: `local`, whose sandboxes bind the host toolchain), whose
placement says so.
"""

from __future__ import annotations

import uuid

from runner.benchmarks.base import BenchmarkError
from runner.outcomes import EvidenceKind

LAYER_FILE = "/app/.boxbench-layer"


def prepare(ctx) -> str:
    """Build the trial's layer and point the trial's spec at it; returns what the placement
    records: the layer, or "none: <why>"."""
    provider = ctx.provider
    mechanism = getattr(provider, "layer_mechanism", "")
    if not mechanism:
        needless = getattr(provider, "layer_needless", "")
        if needless:
            return f"none: {needless}"
        raise BenchmarkError(
            f"{provider.slug or 'this adapter'} builds no per-trial layer, so its create cannot "
            "be measured as the Create benchmark's procedure says"
        )
    base, _ = ctx.create_sandbox(ctx.spec, name="layer_base")
    ctx.check_readiness(base)
    token = uuid.uuid4().hex
    ctx.upload(LAYER_FILE, token.encode(), sandbox=base)
    layer, _ = ctx.snapshot(base, name=None)
    if not getattr(provider, "snapshot_needs_source", False):
        ctx.destroy_sandbox(base)
    ctx.evidence(
        EvidenceKind.SNAPSHOT,
        {"layer": layer, "token": token, "base": base.id, "mechanism": mechanism},
    )
    ctx.use_layer(layer)
    return layer
