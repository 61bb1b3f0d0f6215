"""The significance tests and robust summaries the audit builds on: rank tests, Theil-Sen, the lag-1
permutation test, the two-tier fit, Benjamini-Hochberg and the detectable effect.

Small pure-numpy versions replace scipy calls where scipy's per-call overhead would dominate a
30 x 30 pair audit; tests cross-check each against its scipy counterpart.
"""

import functools
import math

import numpy as np
from scipy import special, stats
from statsmodels.sandbox.stats.runs import runstest_1samp
from statsmodels.stats.power import TTestIndPower

MAD_NORMAL = 1.482602218505602  # 1 / Phi^-1(3/4), scipy's scale="normal"
PERMUTATION_STAGES = (999, 19_999)
PERMUTATION_ENOUGH = 10  # exceedances that make the first stage's p-value precise enough
PERMUTATION_MAX_N = 500  # from here on the asymptotic Spearman p-value is trusted
EM_STEPS = 10  # at most; stops early once the means settle
# Pairwise statistics (Theil-Sen slopes, Kendall's discordant pairs) enumerate n(n-1)/2 pairs up
# to this many points (4.5 million pairs, about 0.2 s); above it they would need gigabytes.
PAIRWISE_MAX_N = 3000
THEIL_SEN_SAMPLED_PAIRS = 1_000_000  # pairs drawn by the seeded estimator above PAIRWISE_MAX_N
THEIL_SEN_SEED = 0


def lower_median(x: np.ndarray) -> float:
    k = (x.size - 1) // 2
    return float(np.partition(x, k)[k])


def robust_sigma(x: np.ndarray) -> float:
    """median_abs_deviation(x, scale="normal"): MAD about the ordinary median x 1.4826."""
    return float(np.median(np.abs(x - np.median(x))) * MAD_NORMAL)


def percent_difference(a: np.ndarray, b: np.ndarray) -> float:
    """100 x (median(a) - median(b)) / median(b), lower medians."""
    mb = lower_median(b)
    return 100.0 * (lower_median(a) - mb) / mb


def group_medians(x: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each element's group lower median."""
    out = np.empty_like(x)
    for g in np.unique(groups):
        members = groups == g
        out[members] = lower_median(x[members])
    return out


def average_ranks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based average ranks (ties share their mean rank) and the size of each tie group."""
    order = np.argsort(x, kind="stable")
    s = x[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    sizes = np.diff(np.r_[starts, s.size])
    mean_rank = starts + (sizes + 1) / 2.0
    ranks = np.empty(x.size)
    ranks[order] = np.repeat(mean_rank, sizes)
    return ranks, sizes


@functools.lru_cache(maxsize=256)
def _u_pmf(n1: int, n2: int) -> np.ndarray:
    """Null distribution of U: coefficients of the Gaussian binomial [n1 + n2, n1]_q over
    C(n1 + n2, n1), built as prod (1 - q^(n2+i)) / (1 - q^i)."""
    size = n1 * n2 + 1
    poly = np.zeros(size)
    poly[0] = 1.0
    for i in range(1, n1 + 1):
        shifted = np.zeros(size)
        shifted[n2 + i :] = poly[: size - n2 - i]
        poly = poly - shifted  # x (1 - q^(n2+i))
        for r in range(i):  # / (1 - q^i): running sums along stride i
            poly[r::i] = np.cumsum(poly[r::i])
    return poly / math.comb(n1 + n2, n1)


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value, as scipy.stats.mannwhitneyu(method="auto") computes
    it: exact when a group has at most 8 values and nothing is tied, otherwise the normal
    approximation with tie correction and continuity correction. NaN when every value is tied:
    nothing can be tested (scipy divides by a zero spread there and returns NaN, or 1.0 with
    the continuity correction), so the comparison leaves the correction family.
    Reimplemented because scipy's per-call overhead is about 1 ms and the audit makes thousands
    of calls; tests cross-check the two."""
    n1, n2 = a.size, b.size
    ranks, ties = average_ranks(np.concatenate([a, b]))
    if ties.size == 1:
        return math.nan
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    if (n1 > 8 and n2 > 8) or (ties > 1).any():
        n = n1 + n2
        tie_term = float((ties.astype(float) ** 3 - ties).sum())
        s = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        p = 2 * float(special.ndtr(-(u - n1 * n2 / 2 - 0.5) / s))
    else:
        pmf = _u_pmf(n1, n2)
        p = 2 * float(pmf[: int(round(n1 * n2 - u)) + 1].sum())  # P(U >= u) by symmetry
    return min(max(p, 0.0), 1.0)


@functools.lru_cache(maxsize=64)
def _inversion_counts(n: int) -> tuple[int, ...]:
    """Mahonian numbers: permutations of n items by number of inversions (exact integers)."""
    counts = [1]
    for j in range(2, n + 1):
        grown = [0] * (len(counts) + j - 1)
        running = 0
        for k in range(len(grown)):
            running += counts[k] if k < len(counts) else 0
            running -= counts[k - j] if 0 <= k - j < len(counts) else 0
            grown[k] = running
        counts = grown
    return tuple(counts)


def kendall_p(y: np.ndarray) -> float:
    """Two-sided p-value of Kendall's tau between execution order 0..n-1 and y, as
    scipy.stats.kendalltau(method="auto") computes it: exact without ties when n <= 33 (or at
    most one discordant or concordant pair), else the normal approximation with y-tie
    correction. NaN when y is constant."""
    n = y.size
    _, ties = average_ranks(y)
    if ties.size == 1:
        return math.nan
    if n > PAIRWISE_MAX_N:
        # scipy counts discordant pairs by merge sort, O(n log n); same formula as below.
        return float(stats.kendalltau(np.arange(n), y).pvalue)
    i, j = np.triu_indices(n, 1)
    dis = int(np.count_nonzero(y[i] > y[j]))
    tot = n * (n - 1) // 2
    tied = ties[ties > 1].astype(float)
    ytie = int((tied * (tied - 1) / 2).sum())
    if ytie == 0 and (n <= 33 or min(dis, tot - dis) <= 1):
        c = min(dis, tot - dis)
        counts = _inversion_counts(n)
        return min(1.0, 2 * sum(counts[: c + 1]) / math.factorial(n))
    con_minus_dis = tot - ytie - 2 * dis
    m = n * (n - 1.0)
    y1 = float((tied * (tied - 1) * (2 * tied + 5)).sum())
    z = con_minus_dis / math.sqrt((m * (2 * n + 5) - y1) / 18)
    return 2 * float(special.ndtr(-abs(z)))


def _sampled_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """THEIL_SEN_SAMPLED_PAIRS index pairs i < j, uniform over all pairs, from default_rng(0)."""
    rng = np.random.default_rng(THEIL_SEN_SEED)
    a = rng.integers(0, n, size=THEIL_SEN_SAMPLED_PAIRS)
    b = rng.integers(0, n - 1, size=THEIL_SEN_SAMPLED_PAIRS)
    b = b + (b >= a)  # uniform over the n - 1 indices other than a
    return np.minimum(a, b), np.maximum(a, b)


def theil_sen(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Median pairwise slope and scipy's intercept median(y) - slope x median(x).

    Up to PAIRWISE_MAX_N points: every pair, the same result as scipy.stats.theilslopes(y, x)
    without its confidence interval. Above: the median slope of 1,000,000 pairs drawn uniformly
    with default_rng(0), a seeded estimate (docs/methodology.md, "Trend at large n"); the
    exhaustive median would need n(n-1)/2 slopes, 54 billion at 330,000 trials.
    `+ 0.0` turns the -0.0 of a flat series into 0.0.
    """
    if x.size > PAIRWISE_MAX_N:
        i, j = _sampled_pairs(x.size)
    else:
        i, j = np.triu_indices(x.size, 1)
    dx = x[j] - x[i]
    keep = dx != 0
    slope = float(np.median((y[j] - y[i])[keep] / dx[keep])) + 0.0
    return slope, float(np.median(y) - slope * np.median(x))


def batch_residuals(values: np.ndarray, batch: np.ndarray) -> tuple[np.ndarray, int]:
    """Residuals after removing each batch's median, then one Theil-Sen trend over the pair's
    execution order; and the number of consecutive pairs within batches.

    One trend for the pair, not one per batch: detrending a batch of three trials would itself
    make neighbouring residuals anti-correlated.
    """
    r = values - group_medians(values, batch)
    position = np.arange(values.size, dtype=float)
    slope, intercept = theil_sen(position, r)
    lagged = values.size - np.unique(batch).size
    return r - (intercept + slope * position), lagged


def _batch_bounds(batch: np.ndarray) -> list[tuple[int, int]]:
    """Contiguous [start, stop) runs of each batch once trials are grouped by batch."""
    change = np.flatnonzero(np.diff(batch)) + 1
    return list(zip(np.r_[0, change].tolist(), np.r_[change, batch.size].tolist(), strict=True))


def _row_corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    den = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(axis=1) / den


@functools.lru_cache(maxsize=16)
def _shuffles(bounds: tuple[tuple[int, int], ...], stage: int) -> np.ndarray:
    """Within-batch shuffles of positions for a batch layout, drawn from default_rng(0): stage 0
    takes the first PERMUTATION_STAGES[0] rows, stage 1 the next PERMUTATION_STAGES[1]. Pairs
    with the same layout share them, which keeps the audit fast."""
    rng = np.random.default_rng(0)
    for k, count in enumerate(PERMUTATION_STAGES[: stage + 1]):
        n = bounds[-1][1]
        perm = np.empty((count, n), dtype=np.intp)
        for s, e in bounds:
            perm[:, s:e] = s + rng.random((count, e - s)).argsort(axis=1)
        if k == stage:
            perm.flags.writeable = False
            return perm
    raise AssertionError("unreachable")


def _subset_ranks(ranks: np.ndarray, keep: np.ndarray, dropped: list[int]) -> np.ndarray:
    # Rank of each kept element among the kept ones: its full rank minus the dropped elements
    # below it (exact when there are no ties). Few batches, so few dropped columns.
    out = ranks[:, keep]
    for d in dropped:
        out = out - (ranks[:, d : d + 1] < ranks[:, keep])
    return out


def _null_rhos(r, bounds, a_pos, b_pos, stage) -> np.ndarray:
    """Lag-1 Spearman rho of the shuffles of one stage applied to r."""
    perm = _shuffles(tuple(bounds), stage)
    first = [s for s, _ in bounds]
    last = [e - 1 for _, e in bounds]
    if np.unique(r).size == r.size:
        ranks = (average_ranks(r)[0] - 1)[perm]
        ra = _subset_ranks(ranks, a_pos, last)
        rb = _subset_ranks(ranks, b_pos, first)
        # Both are permutations of 0..m-1, so Pearson reduces to one dot product per row.
        m = a_pos.size
        centre = (m - 1) / 2
        return ((ra * rb).sum(axis=1) - m * centre * centre) / (m * (m * m - 1) / 12)
    shuffled = r[perm]  # ties: average ranks row by row, slower but exact
    ra = stats.rankdata(shuffled[:, a_pos], axis=1)
    rb = stats.rankdata(shuffled[:, b_pos], axis=1)
    return _row_corr(ra, rb)


def lag1_rho(residuals: np.ndarray, batch: np.ndarray) -> tuple[float, float]:
    """Spearman rho of (r[k], r[k+1]) over consecutive trials within each batch, and its
    two-sided p-value.

    Below 500 trials a seeded permutation test (residuals shuffled within batches): 999
    shuffles, and where fewer than 10 of them reach the observed |rho|, a fresh 19 999 decide,
    so small p-values are resolved finely enough for the run-wide correction. From 500 trials on,
    Spearman's asymptotic p-value.
    """
    order = np.argsort(batch, kind="stable")  # keep execution order inside each batch
    r = residuals[order]
    bounds = _batch_bounds(batch[order])
    a_pos = np.setdiff1d(np.arange(r.size), [e - 1 for _, e in bounds])
    b_pos = np.setdiff1d(np.arange(r.size), [s for s, _ in bounds])
    a, b = r[a_pos], r[b_pos]
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan, math.nan
    rho = float(_row_corr(average_ranks(a)[0][None], average_ranks(b)[0][None])[0])
    if r.size >= PERMUTATION_MAX_N:
        return rho, float(stats.spearmanr(a, b).pvalue)
    for stage in range(len(PERMUTATION_STAGES)):
        null = _null_rhos(r, bounds, a_pos, b_pos, stage)
        extreme = int(np.count_nonzero(np.abs(null) >= abs(rho) - 1e-9))
        if extreme >= PERMUTATION_ENOUGH:
            break
    return rho, (extreme + 1) / (null.size + 1)


def otsu_split(sorted_x: np.ndarray) -> int:
    """Exact Otsu: the k maximizing between-class variance of sorted_x[:k] vs sorted_x[k:]."""
    n = sorted_x.size
    k = np.arange(1, n)
    cumulative = np.cumsum(sorted_x)[:-1]
    mu0 = cumulative / k
    mu1 = (sorted_x.sum() - cumulative) / (n - k)
    between = k * (n - k) * (mu0 - mu1) ** 2
    return int(k[np.argmax(between)])


def _log_density(column, mu, var, weight):
    return -0.5 * ((column - mu) ** 2 / var + np.log(2 * np.pi * var)) + np.log(weight)


def two_tiers(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Fit two Gaussian tiers (Otsu start, a few EM steps). Returns the mask of the lower tier
    and Ashman's D = sqrt(2) |mu1 - mu2| / sqrt(s1^2 + s2^2) of the fitted components."""
    s = np.sort(x)
    k = otsu_split(s)
    mu = np.array([s[:k].mean(), s[k:].mean()])
    var = np.array([s[:k].var(), s[k:].var()])
    weight = np.array([k, x.size - k]) / x.size
    floor = max(x.var(), 1e-300) * 1e-6  # keeps a tight tier from collapsing to zero width
    var = np.maximum(var, floor)
    column = x[:, None]
    for _ in range(EM_STEPS):
        log_p = _log_density(column, mu, var, weight)
        resp = np.exp(log_p - log_p.max(axis=1, keepdims=True))
        resp /= resp.sum(axis=1, keepdims=True)
        mass = resp.sum(axis=0)
        if (mass < 1e-9).any():
            break
        previous = mu
        weight = mass / x.size
        mu = (resp * column).sum(axis=0) / mass
        var = np.maximum((resp * (column - mu) ** 2).sum(axis=0) / mass, floor)
        if (np.abs(mu - previous) <= 1e-9 * np.sqrt(var)).all():
            break  # converged: further steps change nothing that matters
    low = int(np.argmin(mu))
    lower_tier = np.argmax(_log_density(column, mu, var, weight), axis=1) == low
    d = math.sqrt(2) * abs(mu[0] - mu[1]) / math.sqrt(var.sum())
    return lower_tier, d


def runs_test(labels: np.ndarray) -> tuple[float, float]:
    """Wald-Wolfowitz runs test on 0/1 labels, no continuity correction (correction=True
    reports p = 0.648 where the run count equals its expectation)."""
    z, p = runstest_1samp(labels, cutoff=0.5, correction=False)
    return float(z), float(p)


def bh(p_values: list[float]) -> np.ndarray:
    """Benjamini-Hochberg q-values (scipy; statsmodels' fdr_bh can round 0.05 down)."""
    if not p_values:
        return np.array([])
    return stats.false_discovery_control(np.asarray(p_values, dtype=float), method="bh")


@functools.lru_cache(maxsize=1024)
def detectable_d(n1: int, n2: int, alpha: float, power: float = 0.8) -> float | None:
    """Smallest Cohen's d a two-sided rank test detects at `power`: the t-test power with the
    Mann-Whitney efficiency 3/pi applied to the group sizes. None means unbounded: even a
    perfect separation has p = 2 / C(n1 + n2, n1) > alpha."""
    if 2 / math.comb(n1 + n2, n1) > alpha:
        return None
    d = TTestIndPower().solve_power(
        effect_size=None, nobs1=n1 * 3 / math.pi, ratio=n2 / n1, alpha=alpha, power=power
    )
    return float(np.squeeze(d))


def detectable_effect(values: np.ndarray, alpha: float, power: float = 0.8) -> dict:
    """Per pair: the detectable effect for an even split of its trials, as Cohen's d and as a
    percentage of the median (d x robust sigma / median)."""
    n1 = values.size // 2
    n2 = values.size - n1
    out = {"n1": n1, "n2": n2, "alpha": alpha, "cohen_d": None, "percent_of_median": None}
    if n1 < 2:
        out["unbounded"] = True
        return out
    d = detectable_d(n1, n2, float(alpha), power)
    out["unbounded"] = d is None
    if d is not None:
        out["cohen_d"] = d
        out["percent_of_median"] = 100.0 * d * robust_sigma(values) / lower_median(values)
    return out
