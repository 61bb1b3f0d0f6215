"""Synthetic audit input: a clean pair where every check is assessable and passes, which
tests then bend to make one check fail."""

import numpy as np
import pandas as pd


def clean_pair(n=20, provider="p", benchmark="b", seed=0, spread=0.02) -> pd.DataFrame:
    """n trials in 4 rounds; per round the first two start before any trial of the round ends;
    in-flight alternates solo/busy; the host stays cool; one host type; no flag fires."""
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    per_round = n // 4
    rnd = np.minimum(i // per_round, 3) + 1
    position = i - (rnd - 1) * per_round
    start = rnd * 1000.0 + position * 10.0
    end = start + np.where(position == 0, 15.0, 5.0)  # first ends after the second has started
    return pd.DataFrame(
        {
            "provider": provider,
            "benchmark": benchmark,
            "trial_id": [f"{provider}-{benchmark}-{k}" for k in i],
            "value": 100.0 * np.exp(rng.normal(0, spread, n)),
            "seq": i,
            "round": rnd,
            "batch": "batch-1",
            "started_at": start,
            "ended_at": end,
            "in_flight": np.where(i % 2 == 0, 0.0, 2.0),
            "cpu_peak": 0.5,
            "cpu_throttled": False,
            "mem_pressure_some_avg10": 1.0,
            "mem_available_kib": 4_000_000,
            "cpu_count": 2,
            "cpu_model": "EPYC",
            "flag_throughput_ceiling": False,
            "flag_cached_direct_read": False,
            "flag_cpu_bound": False,
            "flag_throttled": False,
            "linked_to_earlier": False,
            "lower_is_better": True,
            "steps_create_or_build": False,
        }
    )
