"""Performance figures for stats/: the bootstrap against scipy.stats.bootstrap on the same data,
an audit of 30 providers x 30 benchmarks x 20 successful trials, and one pair of 330,000 trials
(the size of a 1,000,000-trial run's largest pairs).

Run from the repository root: `python bench/bench_stats.py` (pin one core with
`taskset -c 0 python bench/bench_stats.py`). Prints figures; asserts nothing about time.
"""

import os
import sys
import time

import numpy as np
import pandas as pd
from scipy import stats as sps

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from stats import estimators
from stats.audit import audit


def best_of(fn, repeat=5):
    """Fastest of `repeat` runs in seconds, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def scipy_bootstrap(x):
    def lower_median(s, axis):
        return np.quantile(s, 0.5, axis=axis, method="lower")

    return sps.bootstrap(
        (x,), lower_median, n_resamples=10_000, method="percentile", rng=np.random.default_rng(0)
    )


def bench_bootstrap():
    print("bootstrap_median_ci vs scipy.stats.bootstrap(method='percentile'), 10000 resamples")
    print(f"{'n':>6} {'ours ms':>9} {'scipy ms':>9} {'same resamples':>15}  ours CI / scipy CI")
    rng = np.random.default_rng(42)
    for n in (20, 100, 1000):
        x = rng.lognormal(5, 0.3, n)
        ours_t, ci = best_of(lambda x=x: estimators.bootstrap_median_ci(x))
        scipy_t, res = best_of(lambda x=x: scipy_bootstrap(x))
        same = np.array_equal(res.bootstrap_distribution, estimators.bootstrap_medians(x))
        low, high = res.confidence_interval
        print(
            f"{n:>6} {ours_t * 1e3:>9.1f} {scipy_t * 1e3:>9.1f} {str(same):>15}  "
            f"({ci[0]:.3f}, {ci[1]:.3f}) / ({low:.3f}, {high:.3f})"
        )


def conventions():
    x = np.arange(1, 142, dtype=float)
    low, high = scipy_bootstrap(x).confidence_interval
    ours = estimators.bootstrap_median_ci(x)
    print(f"values 1..141: nearest rank {ours}, scipy interpolated ({low:.3f}, {high:.3f})")


def synthetic_run(providers=30, benchmarks=30, trials=20, seed=1) -> pd.DataFrame:
    """Successful trials with every fact recorded, four rounds of five, two batches."""
    rng = np.random.default_rng(seed)
    size = providers * benchmarks * trials
    i = np.tile(np.arange(trials), providers * benchmarks)
    rnd = i // (trials // 4) + 1
    position = i % (trials // 4)
    start = rnd * 1e4 + position * 10.0
    base = np.repeat(rng.uniform(100, 1000, providers * benchmarks), trials)
    return pd.DataFrame(
        {
            "provider": np.repeat([f"p{k:02d}" for k in range(providers)], benchmarks * trials),
            "benchmark": np.tile(
                np.repeat([f"b{k:02d}" for k in range(benchmarks)], trials), providers
            ),
            "trial_id": np.arange(size),
            "value": base * rng.lognormal(0, 0.05, size),
            "seq": i,
            "round": rnd,
            "batch": i // (trials // 2),
            "started_at": start,
            "ended_at": start + np.where(position == 0, 15.0, 5.0),
            "in_flight": np.where(i % 2 == 0, 0.0, 2.0),
            "cpu_peak": rng.uniform(0.1, 0.85, size),
            "cpu_throttled": False,
            "mem_pressure_some_avg10": rng.uniform(0, 5, size),
            "mem_available_kib": 4_000_000,
            "cpu_count": 2,
            "cpu_model": rng.choice(["EPYC", "Xeon"], size, p=[0.8, 0.2]),
            "flag_throughput_ceiling": False,
            "flag_cached_direct_read": False,
            "flag_cpu_bound": rng.random(size) < 0.1,
            "flag_throttled": False,
            "lower_is_better": True,
            "steps_create_or_build": False,
        }
    )


def bench_audit():
    run = synthetic_run()
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    print(f"\naudit of {len(run)} trials (30 providers x 30 benchmarks x 20), CPUs {affinity}")
    cpu_start = time.process_time()
    seconds, report = best_of(lambda: audit(run), repeat=3)
    cpu = (time.process_time() - cpu_start) / 3  # CPU time is steadier than wall on a busy host
    verdicts = pd.Series([p["verdict"] for p in report["pairs"]]).value_counts().to_dict()
    print(f"wall best of 3: {seconds:.2f} s; CPU mean {cpu:.2f} s; load {os.getloadavg()[0]:.1f}")
    print(f"pair verdicts {verdicts}")
    print(f"families: {report['families']}")


def bench_audit_large(n=330_000):
    run = synthetic_run(providers=1, benchmarks=1, trials=n)
    run["batch"] = np.arange(n) // 5000  # batches of a realistic size, not two
    cpu_start = time.process_time()
    seconds, report = best_of(lambda: audit(run), repeat=1)
    cpu = time.process_time() - cpu_start
    trend = report["pairs"][0]["checks"]["trend"]
    print(f"\naudit of one pair of {n} trials: wall {seconds:.2f} s, CPU {cpu:.2f} s")
    print(f"trend effect {trend['effect']:+.3f} % ({trend['verdict']})")


if __name__ == "__main__":
    bench_bootstrap()
    conventions()
    bench_audit()
    bench_audit_large()
