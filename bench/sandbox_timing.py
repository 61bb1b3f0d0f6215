"""The timing loop the provider-against-provider scripts share (bench_docker_vs_local.py,
bench_opensandbox.py): one sandbox per provider per trial, providers in a random order per trial
so each sees the same moments of machine load, timed on this host's monotonic clock from adapter
entry.

- create: until create returns;
- tti: from create's entry until the first `true` exec answers (create + readiness, retried
  on NotReady like the lifecycle's check);
- exec: each of `calls` further `true` execs (pooled over trials);
- destroy: until destroy returns.
"""

from __future__ import annotations

import random
import time

from runner.providers.base import NotReady, SandboxSpec
from stats.estimators import median, percentile

METRICS = ("create", "tti", "exec", "destroy")


def one_trial(provider, label: str, calls: int) -> dict[str, list[float]]:
    spec = SandboxSpec(cpus=2, memory_mib=4096, label=label, lifetime_s=300)
    started = time.monotonic()
    sandbox = provider.create(spec)
    created = time.monotonic()
    while True:
        try:
            provider.exec(sandbox, ["true"], timeout=30)
            break
        except NotReady:
            time.sleep(0.02)
    ready = time.monotonic()
    execs = []
    for _ in range(calls):
        before = time.monotonic()
        provider.exec(sandbox, ["true"], timeout=30)
        execs.append((time.monotonic() - before) * 1000)
    before = time.monotonic()
    provider.destroy(sandbox)
    destroyed = time.monotonic()
    return {
        "create": [(created - started) * 1000],
        "tti": [(ready - started) * 1000],
        "exec": execs,
        "destroy": [(destroyed - before) * 1000],
    }


def interleaved_trials(
    providers: dict, trials: int, calls: int, seed: int
) -> dict[str, dict[str, list[float]]]:
    """Samples in ms per provider and metric; the order within each trial comes from `seed`."""
    samples = {slug: {metric: [] for metric in METRICS} for slug in providers}
    order_rng = random.Random(seed)
    for trial in range(trials):
        order = list(providers)
        order_rng.shuffle(order)
        for slug in order:
            result = one_trial(providers[slug], f"bb-bench-{trial}", calls)
            for metric, values in result.items():
                samples[slug][metric].extend(values)
    return samples


def print_table(samples: dict[str, dict[str, list[float]]]) -> None:
    """The lower median and nearest-rank p95 of each metric, one line per provider."""
    width = max(8, *(len(slug) + 1 for slug in samples))
    heading = " ".join(f"{m + ' med':>12} {m + ' p95':>12}" for m in METRICS)
    print(f"{'provider':<{width}} {heading}")
    for slug, by_metric in samples.items():
        cells = []
        for metric in METRICS:
            values = by_metric[metric]
            cells.append(f"{median(values):>12.1f} {percentile(values, 95):>12.1f}")
        print(f"{slug:<{width}} " + " ".join(cells))
