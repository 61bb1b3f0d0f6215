"""Two providers side by side: the ratio of their medians with a bootstrap interval, the smallest
difference their sample sizes could detect, and a verdict in words (docs/methodology.md,
"Comparing two providers").

The bootstrap resamples trials within each provider. Drawing 10000 x n indices per provider and
series would cost seconds per provider at a thousand trials, for every unit and stage, so each
resampled lower median is drawn from its exact distribution instead: the lower median of n draws
with replacement is at or below the j-th smallest value exactly when at least ceil(n/2) of the
draws are, which is Binomial(n, j/n). One uniform per resample, inverted through that
distribution, gives a median with the same law as literal resampling, in O(n + 10000 log n).

Reproducible from the raw data: `rng = default_rng(0)`; the provider whose slug sorts first takes
the first 10000 uniforms (`rng.random(10000)`), the other the next 10000; the interval ends are
nearest rank 250 and 9750 of the 10000 ratios b/a. Pure: numpy and scipy only.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy import stats

from stats import estimators
from stats.significance import detectable_d, robust_sigma

RESAMPLES = estimators.BOOTSTRAP_RESAMPLES
SEED = estimators.BOOTSTRAP_SEED
ALPHA = 0.05  # the detectable effect's two-sided test level, uncorrected: one comparison
POWER = 0.8

A_BETTER, B_BETTER, NO_DIFFERENCE, NOT_COMPARABLE = "a", "b", "none", "not_comparable"
VERDICTS = (A_BETTER, B_BETTER, NO_DIFFERENCE, NOT_COMPARABLE)


@functools.cache
def uniforms() -> tuple[np.ndarray, np.ndarray]:
    """The two providers' uniforms: the first 10000 and the next 10000 of default_rng(0)."""
    rng = np.random.default_rng(SEED)
    first, second = rng.random(RESAMPLES), rng.random(RESAMPLES)
    first.flags.writeable = second.flags.writeable = False
    return first, second


@functools.lru_cache(maxsize=512)
def median_cdf(n: int) -> np.ndarray:
    """P(resampled lower median <= j-th smallest value), j = 1..n: P(Binomial(n, j/n) >= k) with
    k = ceil(n/2) the lower median's rank. Ties are broken by position, which the values at
    those positions make irrelevant."""
    k = (n + 1) // 2
    cdf = stats.binom.sf(k - 1, n, np.arange(1, n + 1) / n)
    cdf[-1] = 1.0  # exactly: every draw is at or below the largest value
    cdf = np.maximum.accumulate(cdf)
    cdf.flags.writeable = False  # shared by every series of n values
    return cdf


def median_draws(values, u: np.ndarray) -> np.ndarray:
    """One resampled lower median of `values` per uniform in `u`, by inverting its exact
    distribution (the module's docstring says why)."""
    x = np.sort(estimators.as_values(values))
    return x[np.searchsorted(median_cdf(x.size), u, side="right").clip(max=x.size - 1)]


def pooled_draws(trials, second: bool) -> np.ndarray:
    """Resampled pooled medians (Latency per Call: whole trials resampled, their calls pooled),
    drawn literally as the published interval is (stats.estimators); the second provider's in
    reverse draw order, so that no resample of a shares its random draws with its partner of b."""
    draws = estimators.pooled_bootstrap_medians(trials)
    return draws[::-1] if second else draws


def ratio_interval(draws_a: np.ndarray, draws_b: np.ndarray) -> tuple[float, float]:
    """95 % interval of median(b) / median(a): nearest ranks 250 and 9750 of the draws' ratios."""
    ratios = draws_b / draws_a
    low = estimators.nearest_rank(2.5, ratios.size)
    high = estimators.nearest_rank(97.5, ratios.size)
    ends = np.partition(ratios, [low - 1, high - 1])
    return float(ends[low - 1]), float(ends[high - 1])


def detectable_percent(a, b, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest difference a two-sided rank test at `alpha` detects with `power` at these
    group sizes, as a percentage of the medians' geometric mean: Cohen's d (the t-test's, with
    the Mann-Whitney efficiency 3/pi, as the audit's detectable effect) times the pooled robust
    sigma. None: no difference is detectable (too few trials, or a group all equal values)."""
    a, b = estimators.as_values(a), estimators.as_values(b)
    if min(a.size, b.size) < 2:
        return None
    d = detectable_d(a.size, b.size, alpha, power)
    if d is None:
        return None
    sigma = math.sqrt((robust_sigma(a) ** 2 + robust_sigma(b) ** 2) / 2)
    centre = math.sqrt(estimators.median(a) * estimators.median(b))
    if sigma == 0:
        return None
    return 100.0 * d * sigma / centre


@dataclass(frozen=True)
class Comparison:
    """One benchmark, unit and series (the main metric or a stage) of providers a and b."""

    n_a: int
    n_b: int
    median_a: float | None
    median_b: float | None
    ratio: float | None  # median_b / median_a
    ci_low: float | None
    ci_high: float | None
    detectable_percent: float | None
    verdict: str  # one of VERDICTS
    reason: str  # why not comparable; "" otherwise

    def to_dict(self) -> dict:
        return asdict(self)

    def flipped(self) -> Comparison:
        """The same comparison with a and b swapped: the ratio and its interval inverted."""
        verdict = {A_BETTER: B_BETTER, B_BETTER: A_BETTER}.get(self.verdict, self.verdict)
        return replace(
            self,
            n_a=self.n_b,
            n_b=self.n_a,
            median_a=self.median_b,
            median_b=self.median_a,
            ratio=_inverse(self.ratio),
            ci_low=_inverse(self.ci_high),
            ci_high=_inverse(self.ci_low),
            verdict=verdict,
        )


def _inverse(value: float | None) -> float | None:
    return None if value is None else 1.0 / value


def verdict_of(
    median_a: float,
    median_b: float,
    low: float,
    high: float,
    detectable: float | None,
    lower_is_better: bool,
) -> str:
    """The methodology's winner rule: a winner only where the ratio's interval (b/a) excludes 1
    and the medians differ by at least the detectable difference."""
    if below_detectable(median_a, median_b, detectable):
        return NO_DIFFERENCE
    if low > 1:
        return A_BETTER if lower_is_better else B_BETTER
    if high < 1:
        return B_BETTER if lower_is_better else A_BETTER
    return NO_DIFFERENCE


def compare(
    a, b, draws_a: np.ndarray, draws_b: np.ndarray, lower_is_better: bool, reason: str = ""
) -> Comparison:
    """Compare provider a's values with b's, given each one's resampled medians. A `reason`
    makes the pair not comparable (its medians are still shown)."""
    a, b = estimators.as_values(a, "a's values"), estimators.as_values(b, "b's values")
    median_a, median_b = estimators.median(a), estimators.median(b)
    if not reason and (draws_a.min() <= 0 or draws_b.min() <= 0):
        reason = "a median of zero or less has no ratio"
    if reason:
        return Comparison(
            n_a=a.size,
            n_b=b.size,
            median_a=median_a,
            median_b=median_b,
            ratio=None,
            ci_low=None,
            ci_high=None,
            detectable_percent=None,
            verdict=NOT_COMPARABLE,
            reason=reason,
        )
    low, high = ratio_interval(draws_a, draws_b)
    detectable = detectable_percent(a, b)
    verdict = verdict_of(median_a, median_b, low, high, detectable, lower_is_better)
    return Comparison(
        n_a=a.size,
        n_b=b.size,
        median_a=median_a,
        median_b=median_b,
        ratio=median_b / median_a,
        ci_low=low,
        ci_high=high,
        detectable_percent=detectable,
        verdict=verdict,
        reason="",
    )


def difference_percent(median_a: float, median_b: float) -> float:
    """|b - a| as a percentage of the medians' geometric mean: the measure the detectable
    difference is stated in."""
    return 100.0 * abs(median_b - median_a) / math.sqrt(median_a * median_b)


def below_detectable(median_a: float, median_b: float, detectable: float | None) -> bool:
    """A difference smaller than the samples could detect is never called a difference, even
    where the interval excludes 1: a verdict needs both a large enough ratio and the interval.
    Without a detectable difference (no spread, or too few trials) the interval decides alone."""
    if detectable is None or median_a <= 0 or median_b <= 0:
        return False
    return difference_percent(median_a, median_b) < detectable


def describe(c: Comparison, a_name: str, b_name: str, lower_is_better: bool) -> str:
    """The verdict in words: "A faster by 1.80x (1.60x to 2.00x)", "no detectable difference
    (< 12 %)", "not comparable: <reason>"."""
    if c.verdict == NOT_COMPARABLE:
        return f"not comparable: {c.reason}"
    if c.verdict == NO_DIFFERENCE:
        if c.detectable_percent is None:
            return "no difference detectable at these sample sizes"
        return f"no detectable difference (< {c.detectable_percent:.0f} %)"
    assert c.ratio is not None and c.ci_low is not None and c.ci_high is not None
    word = "faster" if lower_is_better else "higher"
    # The winner's factor is how many times better it is: b/a when b is ahead on a higher-is-
    # better metric or a on a lower-is-better one, a/b otherwise.
    b_over_a = (c.verdict == A_BETTER) == lower_is_better
    if b_over_a:
        factor, low, high = c.ratio, c.ci_low, c.ci_high
    else:
        factor, low, high = 1 / c.ratio, 1 / c.ci_high, 1 / c.ci_low
    name = a_name if c.verdict == A_BETTER else b_name
    return f"{name} {word} by {factor:.2f}x ({low:.2f}x to {high:.2f}x)"


def summary(verdicts: list[str], a_name: str, b_name: str) -> dict:
    """How many comparisons end in each verdict, and the line that says so."""
    counts = {v: verdicts.count(v) for v in VERDICTS}
    parts = [
        f"{a_name} ahead on {counts[A_BETTER]}",
        f"{b_name} ahead on {counts[B_BETTER]}",
        f"no detectable difference on {counts[NO_DIFFERENCE]}",
        f"not comparable on {counts[NOT_COMPARABLE]}",
    ]
    noun = "comparison" if len(verdicts) == 1 else "comparisons"
    return {"counts": counts, "text": f"{len(verdicts)} {noun}: " + ", ".join(parts)}
