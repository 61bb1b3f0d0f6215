"""Create's unique per-trial layer: an image no earlier create can have cached.

"The Create tests append a unique per-trial layer to a pinned base image." Before the timed create,
untimed: a sandbox of the pinned standard image gets a file holding a token unique to the trial,
is snapshotted (an image commit on `docker`: the pinned base plus one layer) and destroyed; the
trial's create then starts from that image. The image is deleted and confirmed gone at cleanup
like every snapshot, or the trial is not a success. Only an adapter whose snapshots are images its
create accepts (`Provider.snapshots_are_images`: docker) builds one; any other gets no layer and
the trial's placement says so (`local` has no image at all: each sandbox binds the host
toolchain, so there is nothing a create could find cached). The cloud adapters come later.
"""

from __future__ import annotations

import dataclasses
import uuid

from runner.outcomes import EvidenceKind

LAYER_FILE = "/app/.boxbench-layer"


def prepare(ctx) -> str:
    """Build the trial's layer and point the trial's spec at it; returns what the placement
    records: the image, or "none: <why>"."""
    if not getattr(ctx.provider, "snapshots_are_images", False):
        return f"none: {ctx.provider.slug or 'this adapter'} builds no image layers"
    base, _ = ctx.create_sandbox(ctx._spec, name="layer_base")
    ctx.check_readiness(base)
    token = uuid.uuid4().hex
    ctx._transfer("upload", None, lambda: ctx.provider.upload(base, LAYER_FILE, token.encode()))
    image, _ = ctx.snapshot(base, name=None)
    ctx.destroy_sandbox(base)
    ctx.evidence(EvidenceKind.SNAPSHOT, {"layer": image, "token": token, "base": base.id})
    ctx._spec = dataclasses.replace(ctx._spec, image=image)
    return image
