"""The pre-publication statistical audit: ten run checks per provider-benchmark pair,
Benjamini-Hochberg correction, the failure rule, coverage and detectable effects
(docs/methodology.md, "Statistical run checks").

Input: one row per successful trial and main metric (see COLUMNS). Output: `audit(trials)`
returns a JSON-serializable dict (see docs/methodology.md for its layout).

Speed matters (30 providers x 30 benchmarks x 20 trials within 10 s on one core), so the frame is
converted to numpy once and each pair works on array slices; no pandas inside the pair loop.
"""

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd

from stats import significance as sig

PAIR_KEYS = ("provider", "benchmark")
REQUIRED = ("provider", "benchmark", "trial_id", "value", "seq")
COLUMNS = {
    "provider": "pair key",
    "benchmark": "pair key",
    "metric": "optional third pair key when a benchmark has several main metrics",
    "trial_id": "identifier reported back for excluded trials (str or int)",
    "value": "the trial's main-metric value, positive and finite",
    "seq": "execution order within the pair (any increasing number)",
    "round": "round number (1..4); missing -> first round and round start unassessed",
    "batch": "batch identifier; missing -> the pair is one batch",
    "started_at": "trial start (seconds or datetime); used for round start",
    "ended_at": "trial end (seconds or datetime); used for round start",
    "in_flight": "time-weighted mean of other trials of the batch holding a sandbox",
    "cpu_peak": "job-host peak CPU over the trial as a fraction of its limit (0..1)",
    "cpu_throttled": "job-host CPU throttling seen over the trial (bool)",
    "mem_pressure_some_avg10": "job-host memory pressure some avg10, percent",
    "mem_available_kib": "job-host available memory, KiB (used where pressure is absent)",
    "cpu_count": "sandbox-visible CPU count (placement fact)",
    "cpu_model": "sandbox-visible CPU model (placement fact)",
    "flag_throughput_ceiling": "trial hit a physical throughput ceiling (bool)",
    "flag_cached_direct_read": "a direct read was served from cache (bool)",
    "flag_cpu_bound": "the run was CPU-bound (bool)",
    "flag_throttled": "the sandbox's CPU was throttled (bool)",
    "linked_to_earlier": "a recorded fact ties the trial to an earlier one (bool)",
    "lower_is_better": "metric direction, constant per pair (default True)",
    "steps_create_or_build": "the benchmark's steps include create or a build (default False)",
    "shares_job_host": "the provider's sandboxes run on the job host (default False)",
    "other_chain_on_host": "another provider's trial ran on the same job host meanwhile (bool)",
}
FLAGS = (
    "flag_throughput_ceiling",
    "flag_cached_direct_read",
    "flag_cpu_bound",
    "flag_throttled",
)
FLOAT_FACTS = (
    "round",
    "started_at",
    "ended_at",
    "round_first_end",
    "in_flight",
    "cpu_peak",
    "cpu_throttled",
    "mem_pressure_some_avg10",
    "mem_available_kib",
    "cpu_count",
    "linked_to_earlier",
    "other_chain_on_host",
    *FLAGS,
)

MIN_SUCCESSES = 15
Q_LEVEL = 0.05
POWER = 0.8
CHECKS = (
    "trend",
    "first_round",
    "round_start",
    "lag1",
    "overlap",
    "host_saturated",
    "tier_split",
    "host_type",
    "outliers",
    "cache_flags",
)
# Each check as a reader's page names it (the ids stay in CSV, API and the audit report).
CHECK_WORDS = {
    "trend": "times drifted during the run",
    "first_round": "the first round ran apart from the rest",
    "round_start": "each round's first trials ran apart",
    "lag1": "consecutive trials were correlated",
    "overlap": "overlapping trials changed the times",
    "host_saturated": "the job host was saturated",
    "tier_split": "trials fell into two speed tiers",
    "host_type": "job hosts of different types",
    "outliers": "extreme values on the better side",
    "cache_flags": "caches or physical limits flagged",
}
# The smallest difference between two groups of trials that a check (or change detection
# between two runs, stats.changes) calls a difference: percent of the earlier group's median.
BETWEEN_GROUPS_MIN_EFFECT = 15.0
MIN_EFFECT = {  # percent of the median, except lag 1's rho
    "trend": 8.0,
    "first_round": BETWEEN_GROUPS_MIN_EFFECT,
    "round_start": BETWEEN_GROUPS_MIN_EFFECT,
    "lag1": 0.5,
    "overlap": BETWEEN_GROUPS_MIN_EFFECT,
    "host_saturated": BETWEEN_GROUPS_MIN_EFFECT,
    "host_type": 20.0,
}
LAG1_SPREAD = 8.0  # |rho| x robust spread must also reach 8 % of the median
MIN_GROUP = 5  # first round, round start, overlap, host saturated, host-type reference
HOST_TYPE_MIN_GROUP = 3
SATURATED_SHARE = 0.25
SATURATION = {"cpu_peak": 0.9, "mem_pressure": 10.0, "mem_available_kib": 262144}
OVERLAP_BUSY, OVERLAP_SOLO = 1.0, 0.1
TIER_MIN_N, TIER_MIN_SMALL, TIER_FAIL_SMALL = 8, 3, 5
TIER_NOTE_RATIO, TIER_FAIL_RATIO = 1.3, 1.8
ASHMAN_FLOORS = ((200, 3.4), (100, 3.6), (40, 4.2), (20, 5.0), (8, 6.3))
OUTLIER_MIN_N, OUTLIER_SIGMAS, OUTLIER_RATIO, OUTLIER_SHARE = 8, 6.0, 2.0, 0.05
CACHE_SHARE = 0.15
STATEMENT_FLAGS = {"flag_throughput_ceiling", "flag_cached_direct_read"}


@dataclass(frozen=True)
class AuditSettings:
    """Every threshold and minimum an audit applies; the report records them all
    (`settings`), so re-auditing an old run can apply the settings it was audited with.
    The defaults are the module constants above."""

    min_successes: int = MIN_SUCCESSES
    q_level: float = Q_LEVEL
    power: float = POWER
    min_effect: dict = field(default_factory=lambda: dict(MIN_EFFECT))
    lag1_spread: float = LAG1_SPREAD
    lag1_min_pairs: int = 2  # a rank correlation needs two pairs; the spec sets no other minimum
    min_group: int = MIN_GROUP
    host_type_min_group: int = HOST_TYPE_MIN_GROUP
    saturated_share: float = SATURATED_SHARE
    saturation: dict = field(default_factory=lambda: dict(SATURATION))
    overlap_busy: float = OVERLAP_BUSY
    overlap_solo: float = OVERLAP_SOLO
    tier_min_n: int = TIER_MIN_N
    tier_min_small: int = TIER_MIN_SMALL
    tier_fail_small: int = TIER_FAIL_SMALL
    tier_note_ratio: float = TIER_NOTE_RATIO
    tier_fail_ratio: float = TIER_FAIL_RATIO
    ashman_floors: tuple = ASHMAN_FLOORS
    outlier_min_n: int = OUTLIER_MIN_N
    outlier_sigmas: float = OUTLIER_SIGMAS
    outlier_ratio: float = OUTLIER_RATIO
    outlier_share: float = OUTLIER_SHARE
    cache_share: float = CACHE_SHARE

    def to_dict(self) -> dict:
        # Copies: the report must never share a dict with the settings (or the defaults).
        out = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)}
        out["ashman_floors"] = [list(pair) for pair in self.ashman_floors]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> tuple["AuditSettings", list[str]]:
        """The settings a report recorded, and the names it did not record (those take the
        current defaults). Unknown names and wrong types are refused with a ValueError."""
        if not isinstance(data, dict):
            raise ValueError("audit settings must be an object")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"unknown audit settings: {', '.join(unknown)}")
        default = cls()
        values = {}
        for name, value in data.items():
            expected = getattr(default, name)
            if isinstance(expected, dict):
                if not isinstance(value, dict) or set(value) != set(expected):
                    raise ValueError(f"audit setting {name} must name {sorted(expected)}")
                value = {k: _setting_number(name, v) for k, v in value.items()}
            elif isinstance(expected, tuple):
                try:
                    value = tuple((int(n), float(f)) for n, f in value)
                except (TypeError, ValueError):
                    raise ValueError(f"audit setting {name} must be [n, floor] pairs") from None
            else:
                value = _setting_number(name, value)
                value = int(value) if isinstance(expected, int) else float(value)
            values[name] = value
        missing = sorted(set(known) - set(data))
        return cls(**values), missing

    def differences(self, other: "AuditSettings") -> dict:
        """{name: {"used": mine, "current": other's}} for every setting that differs."""
        mine, theirs = self.to_dict(), other.to_dict()
        return {
            name: {"used": mine[name], "current": theirs[name]}
            for name in mine
            if mine[name] != theirs[name]
        }


def _setting_number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"audit setting {name} must be a finite number, not {value!r}")
    return value


DEFAULT_SETTINGS = AuditSettings()


@dataclass
class Finding:
    """One check on one pair. `judge(qs)` turns the q-values of `ps` into (verdict, reason)."""

    check: str
    effect: float | None = None
    ps: list[float] = field(default_factory=list)
    family: str | None = None  # "failure", "host_type" or None (decided without a test)
    verdict: str | None = None  # set now when no test is involved
    reason: str = ""
    details: dict = field(default_factory=dict)
    judge: Callable | None = None
    qs: list[float] = field(default_factory=list)

    def to_dict(self) -> dict:
        tested = [p for p in self.ps if not math.isnan(p)]
        p = min(tested) if tested else None
        q = min((q for q in self.qs if not math.isnan(q)), default=None)
        return {
            "effect": _num(self.effect),
            "p": _num(p),
            "q": _num(q),
            "verdict": self.verdict,
            "reason": self.reason,
            "details": _jsonable(self.details),
        }


def _num(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return _num(obj)
    return obj


def unassessed(check: str, reason: str) -> Finding:
    return Finding(check, verdict="unassessed", reason=reason)


def tested(
    check: str, effect: float, p: float, passes_effect: bool, what: str, q_level: float = Q_LEVEL
) -> Finding:
    """A failure-family finding under the failure rule: fail = large and q < q_level."""

    def judge(qs):
        q = qs[0]
        if math.isnan(q):
            return "pass", f"{what}: no variation to test"
        if q < q_level and passes_effect:
            return "fail", f"{what}: effect {effect:+.1f} reaches its minimum and q = {q:.3g}"
        if q < q_level:
            return "note", f"{what}: significant (q = {q:.3g}) but below the minimum effect"
        return "pass", f"{what}: effect {effect:+.1f}, q = {q:.3g}"

    return Finding(check, effect=effect, ps=[p], family="failure", judge=judge)


# --- data preparation -------------------------------------------------------------------------


@dataclass
class Pair:
    key: dict
    trial_id: np.ndarray
    value: np.ndarray
    facts: dict  # name -> float array (NaN = not recorded)
    batch: np.ndarray  # int codes
    host_type: np.ndarray  # int codes, -1 = not recorded
    lower_is_better: bool
    steps_create_or_build: bool
    shares_job_host: bool = False
    settings: AuditSettings = DEFAULT_SETTINGS


def _seconds(column: pd.Series) -> np.ndarray:
    if pd.api.types.is_datetime64_any_dtype(column):
        stamps = pd.to_datetime(column, utc=True)
        return (stamps - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy(dtype=float)
    return pd.to_numeric(column, errors="raise").to_numpy(dtype=float, na_value=np.nan)


def _float(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame:
        return np.full(len(frame), np.nan)
    if name in ("started_at", "ended_at", "round_first_end"):
        return _seconds(frame[name])
    column = frame[name]
    if column.dtype == object:
        column = column.map(lambda v: np.nan if v is None or v is pd.NA else float(v))
    return column.to_numpy(dtype=float, na_value=np.nan)


def _codes(frame: pd.DataFrame, names: list[str]) -> np.ndarray:
    present = [n for n in names if n in frame]
    if len(present) < len(names):
        return np.full(len(frame), -1)
    groups = frame.groupby(present, sort=True, dropna=True).ngroup()
    return groups.fillna(-1).to_numpy().astype(int)  # -1: a fact missing on that row


def _validate(frame: pd.DataFrame) -> None:
    missing = [c for c in REQUIRED if c not in frame]
    if missing:
        raise ValueError(f"audit input lacks required columns {missing}; see stats.audit.COLUMNS")
    value = pd.to_numeric(frame["value"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if not (np.isfinite(value).all() and (value > 0).all()):
        raise ValueError("audit input: every value must be positive and finite (successes only)")


def split_pairs(frame: pd.DataFrame, settings: AuditSettings = DEFAULT_SETTINGS) -> list[Pair]:
    """Sort once by pair and execution order, then cut numpy slices per pair."""
    _validate(frame)
    keys = [*PAIR_KEYS, *(["metric"] if "metric" in frame else [])]
    frame = frame.reset_index(drop=True)
    group = frame.groupby(keys, sort=True, dropna=False).ngroup().to_numpy()
    seq = pd.to_numeric(frame["seq"]).to_numpy(dtype=float)
    order = np.lexsort((seq, group))
    frame = frame.iloc[order].reset_index(drop=True)
    group = group[order]
    value = frame["value"].to_numpy(dtype=float)
    trial_id = frame["trial_id"].to_numpy(dtype=object)
    facts = {name: _float(frame, name) for name in FLOAT_FACTS}
    batch = _codes(frame, ["batch"])
    # No batch column: the pair is one batch; a row without a batch joins an "unknown" batch.
    batch = np.where(batch < 0, batch.max() + 1, batch)
    host_type = _codes(frame, ["cpu_count", "cpu_model"])
    direction = _float(frame, "lower_is_better")
    builds = _float(frame, "steps_create_or_build")
    shares = _float(frame, "shares_job_host")
    key_rows = frame[keys].to_numpy(dtype=object)
    bounds = np.flatnonzero(np.diff(group)) + 1
    pairs = []
    for start, stop in zip(np.r_[0, bounds], np.r_[bounds, len(frame)], strict=True):
        s = slice(start, stop)
        pairs.append(
            Pair(
                key=dict(zip(keys, key_rows[start].tolist(), strict=True)),
                trial_id=trial_id[s],
                value=value[s],
                facts={name: column[s] for name, column in facts.items()},
                batch=batch[s],
                host_type=host_type[s],
                lower_is_better=direction[start] != 0.0,  # NaN (absent) -> lower is better
                steps_create_or_build=builds[start] == 1.0,
                shares_job_host=shares[start] == 1.0,
                settings=settings,
            )
        )
    return pairs


# --- the ten checks ---------------------------------------------------------------------------


def check_trend(pair: Pair) -> Finding:
    """Theil-Sen slope over execution order x (n - 1): the fitted drift from first to last trial,
    as a percentage of the median; Kendall's tau gives the p-value."""
    v = pair.value
    x = np.arange(v.size, dtype=float)
    slope, _ = sig.theil_sen(x, v)
    effect = 100.0 * slope * (v.size - 1) / sig.lower_median(v)
    p = sig.kendall_p(v)
    cfg = pair.settings
    return tested("trend", effect, p, abs(effect) >= cfg.min_effect["trend"], "drift", cfg.q_level)


def check_first_round(pair: Pair) -> Finding:
    rnd = pair.facts["round"]
    if np.isnan(rnd).any():
        return unassessed("first_round", "round numbers not recorded")
    first = rnd == rnd.min()
    return _two_groups(
        pair, "first_round", pair.value[first], pair.value[~first], "first round", "later"
    )


def _two_groups(
    pair: Pair, check: str, a: np.ndarray, b: np.ndarray, a_name: str, b_name: str
) -> Finding:
    cfg = pair.settings
    if a.size < cfg.min_group or b.size < cfg.min_group:
        return unassessed(
            check,
            f"{a.size} {a_name} and {b.size} {b_name} trials; needs {cfg.min_group} in each",
        )
    effect = sig.percent_difference(a, b)
    p = sig.mann_whitney_p(a, b)
    passes = abs(effect) >= cfg.min_effect[check]
    finding = tested(check, effect, p, passes, f"{a_name} vs {b_name}", cfg.q_level)
    # The run page shows the two groups' medians beside the effect (the first round against the
    # rest discloses how a warm pool tuned to the schedule would show).
    finding.details = {
        "n_a": a.size,
        "n_b": b.size,
        "median_a": sig.lower_median(a),
        "median_b": sig.lower_median(b),
    }
    return finding


def check_round_start(pair: Pair) -> Finding:
    """Trials started before any trial of their round finished, against the rest of the round,
    each as a ratio to its round's median.

    "Any trial of the round" counts every attempt, not only the successes the frame holds: the
    optional `round_first_end` column gives, per trial, the first end of any trial of its round;
    where it is not recorded the successes' own first end stands in."""
    rnd, start, end = (pair.facts[k] for k in ("round", "started_at", "ended_at"))
    if np.isnan(rnd).any() or np.isnan(start).any() or np.isnan(end).any():
        return unassessed("round_start", "round numbers or trial start/end times not recorded")
    first_end = pair.facts["round_first_end"]
    ratio = np.empty_like(pair.value)
    initial = np.zeros(pair.value.size, dtype=bool)
    for r in np.unique(rnd):
        members = rnd == r
        ratio[members] = pair.value[members] / sig.lower_median(pair.value[members])
        closes = np.fmin(end[members].min(), np.nanmin(first_end[members], initial=np.inf))
        initial[members] = start[members] < closes
    return _two_groups(pair, "round_start", ratio[initial], ratio[~initial], "round-start", "rest")


def check_lag1(pair: Pair) -> Finding:
    """Lag-1 Spearman rho of residuals within batches (batch median and Theil-Sen trend
    removed); permutation p-value below 500 trials."""
    residuals, lagged = sig.batch_residuals(pair.value, pair.batch)
    cfg = pair.settings
    if lagged < cfg.lag1_min_pairs:
        return unassessed(
            "lag1", f"{lagged} consecutive pairs within batches; needs {cfg.lag1_min_pairs}"
        )
    rho, p = sig.lag1_rho(residuals, pair.batch)
    if math.isnan(rho):
        return Finding("lag1", verdict="pass", reason="residuals do not vary")
    spread = 100.0 * abs(rho) * sig.robust_sigma(residuals) / sig.lower_median(pair.value)
    passes = abs(rho) >= cfg.min_effect["lag1"] and spread >= cfg.lag1_spread
    finding = tested("lag1", rho, p, passes, "lag-1 rho", cfg.q_level)
    finding.details = {"spread_percent": spread}
    return finding


def check_overlap(pair: Pair) -> Finding:
    busy = pair.facts["in_flight"]
    if np.isnan(busy).all():
        return unassessed("overlap", "in-flight counts not recorded")
    ratio = pair.value / sig.group_medians(pair.value, pair.batch)
    cfg = pair.settings
    busy_rows, solo_rows = busy >= cfg.overlap_busy, busy <= cfg.overlap_solo
    return _two_groups(pair, "overlap", ratio[busy_rows], ratio[solo_rows], "overlapping", "solo")


def saturated(facts: dict, saturation: dict = SATURATION) -> tuple[np.ndarray, np.ndarray]:
    """(hot, known) per trial. Hot: peak CPU >= 0.9, any throttling, pressure >= 10 %, or, where
    pressure is absent, under 262144 KiB available; or another provider's chain was timed on the
    same job host meanwhile, which the methodology's dedicated job hosts rule out whatever the
    load read. Cool needs peak CPU and a memory fact."""
    peak, throttled = facts["cpu_peak"], facts["cpu_throttled"]
    shared = facts.get("other_chain_on_host", np.full(peak.shape, np.nan)) == 1.0
    pressure, available = facts["mem_pressure_some_avg10"], facts["mem_available_kib"]
    with np.errstate(invalid="ignore"):
        hot = (
            (peak >= saturation["cpu_peak"])
            | (throttled == 1.0)
            | (pressure >= saturation["mem_pressure"])
            | (np.isnan(pressure) & (available < saturation["mem_available_kib"]))
            | shared
        )
    memory_known = ~np.isnan(pressure) | ~np.isnan(available)
    return hot, hot | (~np.isnan(peak) & memory_known)


def check_host_saturated(pair: Pair) -> Finding:
    # Judged for every provider, as the spec does. Where the sandboxes run on the job host
    # (shares_job_host) the trial's own load is part of the host's load: the finding says so in
    # its details, for whoever resolves it, but is not spared.
    cfg = pair.settings
    hot, known = saturated(pair.facts, cfg.saturation)
    if not known.any():
        return unassessed("host_saturated", "job-host load facts not recorded")
    cool = known & ~hot
    n_hot, n_cool = int(hot.sum()), int(cool.sum())
    if n_hot >= cfg.min_group and n_cool >= cfg.min_group:
        a, b = pair.value[hot], pair.value[cool]
        slower = sig.percent_difference(a, b) * (1 if pair.lower_is_better else -1)
        p = sig.mann_whitney_p(a, b)
        passes = slower >= cfg.min_effect["host_saturated"]
        what = "hot vs cool (% slower)"
        finding = tested("host_saturated", slower, p, passes, what, cfg.q_level)
        finding.details = {
            "hot": n_hot,
            "cool": n_cool,
            "shares_job_host": pair.shares_job_host,
            "other_chain_on_host": _shared_host_trials(pair),
        }
        return finding
    # The spec's share: saturated trials over all of the pair's trials.
    share = n_hot / pair.value.size
    details = {
        "hot": n_hot,
        "cool": n_cool,
        "saturated_share": share,
        "shares_job_host": pair.shares_job_host,
        "other_chain_on_host": _shared_host_trials(pair),
    }
    if share >= cfg.saturated_share:
        reason = f"saturated share {share:.2f} >= {cfg.saturated_share} (fails without a test)"
        return Finding("host_saturated", share, verdict="fail", reason=reason, details=details)
    if n_hot:
        reason = f"{n_hot} saturated trials (share {share:.2f}), too few to test"
        return Finding("host_saturated", share, verdict="note", reason=reason, details=details)
    return Finding("host_saturated", 0.0, verdict="pass", reason="host never saturated")


def _shared_host_trials(pair: Pair) -> int:
    """The pair's trials timed while another provider's chain ran on the same job host."""
    return int((pair.facts["other_chain_on_host"] == 1.0).sum())


def check_tier_split(pair: Pair) -> Finding:
    v, cfg = pair.value, pair.settings
    if v.size < cfg.tier_min_n:
        return unassessed("tier_split", f"{v.size} trials; needs {cfg.tier_min_n}")
    fast, d = sig.two_tiers(v)
    floor = next(f for n, f in cfg.ashman_floors if v.size >= n)
    small = int(min(fast.sum(), (~fast).sum()))
    details = {"ashman_d": d, "d_floor": floor, "smaller_tier": small}
    if small < cfg.tier_min_small or not d >= floor:
        return Finding("tier_split", verdict="pass", reason="no bimodal split", details=details)
    slow_med, fast_med = sig.lower_median(v[~fast]), sig.lower_median(v[fast])
    ratio = max(slow_med, fast_med) / min(slow_med, fast_med)
    z, p = sig.runs_test(fast.astype(float))  # tiers in execution order
    details.update(tier_ratio=ratio, runs_z=z)

    def judge(qs):
        clustered = z < 0 and qs[0] < cfg.q_level  # fewer runs than chance: tiers bunch in time
        if ratio >= cfg.tier_fail_ratio and small >= cfg.tier_fail_small and clustered:
            return "fail", f"tier ratio {ratio:.2f}, tiers cluster in time (q = {qs[0]:.3g})"
        if ratio >= cfg.tier_note_ratio:
            where = "cluster in time" if clustered else "do not cluster in time (placement)"
            return "note", f"tier ratio {ratio:.2f}; tiers {where}"
        return "pass", f"split with tier ratio {ratio:.2f} below {cfg.tier_note_ratio}"

    return Finding("tier_split", ratio, [p], "failure", details=details, judge=judge)


def check_host_type(pair: Pair) -> Finding:
    codes, cfg = pair.host_type, pair.settings
    if (codes < 0).all():
        return unassessed("host_type", "CPU count and model not recorded")
    known = codes >= 0
    kinds, counts = np.unique(codes[known], return_counts=True)
    reference = kinds[np.argmax(counts)]  # most common; ties go to the first in sorted order
    if counts.max() < cfg.min_group:
        return unassessed(
            "host_type",
            f"most common host type has {counts.max()} trials; needs {cfg.min_group}",
        )
    base = pair.value[codes == reference]
    effects, ps = [], []
    for kind, count in zip(kinds, counts, strict=True):
        if kind != reference and count >= cfg.host_type_min_group:
            group = pair.value[codes == kind]
            effects.append(sig.percent_difference(group, base))
            ps.append(sig.mann_whitney_p(group, base))
    if not effects:
        return Finding("host_type", verdict="pass", reason="one host type with enough trials")

    def judge(qs):
        minimum, q_level = cfg.min_effect["host_type"], cfg.q_level
        hits = [e for e, q in zip(effects, qs, strict=True) if abs(e) >= minimum and q < q_level]
        if hits:
            return "note", f"placement: a host type differs by {max(hits, key=abs):+.1f} %"
        return "pass", f"host types agree within {minimum:g} % or not significantly"

    largest = max(effects, key=abs)
    details = {"comparisons": len(effects), "effects": effects}
    return Finding("host_type", largest, ps, "host_type", details=details, judge=judge)


def _any_flag(pair: Pair) -> np.ndarray:
    return np.asarray(np.column_stack([pair.facts[f] == 1.0 for f in FLAGS]).any(axis=1))


def check_outliers(pair: Pair) -> tuple[Finding, list[dict]]:
    """Isolated extremes: beyond 6 robust sigmas and at least 2x away from the median, at most
    max(1, 0.05 n) of them. Returns the finding and the trials it excludes."""
    v, cfg = pair.value, pair.settings
    if v.size < cfg.outlier_min_n:
        return unassessed("outliers", f"{v.size} trials; needs {cfg.outlier_min_n}"), []
    med, sigma = sig.lower_median(v), sig.robust_sigma(v)
    # sigma 0 (over half the values equal): any other value counts as beyond the sigma bound.
    far = np.abs(v - med) > cfg.outlier_sigmas * sigma
    extreme = far & ((v >= cfg.outlier_ratio * med) | (v <= med / cfg.outlier_ratio))
    limit = max(1, math.floor(cfg.outlier_share * v.size))
    count = int(extreme.sum())
    if count == 0:
        return Finding("outliers", 0, verdict="pass", reason="no isolated extreme values"), []
    if count > limit:
        reason = f"{count} extreme values exceed the isolated limit of {limit}; none excluded"
        return Finding("outliers", count, verdict="note", reason=reason), []
    explained = _any_flag(pair)
    kept, excluded = [], []
    for i in np.flatnonzero(extreme):
        worse = v[i] > med if pair.lower_is_better else v[i] < med
        item = {"trial_id": _jsonable(pair.trial_id[i]), "value": float(v[i])}
        if worse:
            kept.append({**item, "reason": "slow spike, kept and reported"})
        elif explained[i]:
            kept.append({**item, "reason": "better side explained by its physical-limit check"})
        elif pair.steps_create_or_build and pair.facts["linked_to_earlier"][i] != 1.0:
            kept.append({**item, "reason": "better side kept as the provider's warm pool"})
        else:
            excluded.append(
                {**item, "reason": "isolated better-side value excluded as implausible"}
            )
    details = {"median": med, "robust_sigma": sigma, "kept": kept, "excluded": excluded}
    if excluded:
        reason = f"{len(excluded)} better-side value(s) excluded (fails without a test)"
        return Finding("outliers", count, verdict="fail", reason=reason, details=details), excluded
    reason = "; ".join(k["reason"] for k in kept)
    return Finding("outliers", count, verdict="note", reason=reason, details=details), []


def check_cache_flags(pair: Pair) -> Finding:
    shares = {}
    for name in FLAGS:
        recorded = ~np.isnan(pair.facts[name])
        if recorded.any():
            shares[name] = float((pair.facts[name][recorded] == 1.0).mean())
    if not shares:
        return unassessed("cache_flags", "no physical-limit or cache check recorded")
    frequent = [n for n, s in shares.items() if s >= pair.settings.cache_share]
    statements = [n for n in frequent if n in STATEMENT_FLAGS]
    notes = [n for n in frequent if n not in STATEMENT_FLAGS]
    details = {"shares": shares, "page_statements": statements, "notes": notes}
    if frequent:
        share = pair.settings.cache_share
        reason = f"fires in >= {100 * share:g} % of trials: {', '.join(frequent)}"
        top = max(shares.values())
        return Finding("cache_flags", top, verdict="note", reason=reason, details=details)
    return Finding("cache_flags", max(shares.values()), verdict="pass", reason="", details=details)


PAIR_CHECKS = (
    check_trend,
    check_first_round,
    check_round_start,
    check_lag1,
    check_overlap,
    check_host_saturated,
    check_tier_split,
    check_host_type,
)


def audit_pair(pair: Pair) -> tuple[list[Finding], list[dict]]:
    """All ten checks on one pair; under 15 successes every check is unassessed."""
    minimum = pair.settings.min_successes
    if pair.value.size < minimum:
        reason = f"{pair.value.size} successful trials; needs {minimum}"
        return [unassessed(c, reason) for c in CHECKS], []
    findings = [check(pair) for check in PAIR_CHECKS]
    outliers, excluded = check_outliers(pair)
    findings += [outliers, check_cache_flags(pair)]
    return findings, excluded


# --- correction, verdicts and the report -------------------------------------------------------


def _correct(findings: list[Finding], family: str, q_level: float = Q_LEVEL) -> dict:
    """BH over every p-value of one family (NaN dropped first: scipy refuses them)."""
    members = [(f, i) for f in findings if f.family == family for i in range(len(f.ps))]
    for f in findings:
        if f.family == family:
            f.qs = [math.nan] * len(f.ps)
    usable = [(f, i) for f, i in members if not math.isnan(f.ps[i])]
    qs = sig.bh([f.ps[i] for f, i in usable])
    for (f, i), q in zip(usable, qs, strict=True):
        f.qs[i] = float(q)
    discoveries = int(sum(q < q_level for q in qs))
    return {
        "size": len(usable),
        "untestable": len(members) - len(usable),
        "discoveries": discoveries,
    }


def _pair_verdict(findings: list[Finding]) -> str:
    verdicts = {f.verdict for f in findings}
    for v in ("fail", "note", "pass"):
        if v in verdicts:
            return v
    return "unassessed"


def audit(trials: pd.DataFrame, settings: AuditSettings = DEFAULT_SETTINGS) -> dict:
    """Audit a run; see COLUMNS for the input and docs/methodology.md for the report layout.
    The report records every setting it applied (`settings`)."""
    pairs = split_pairs(trials, settings)
    audited = [(pair, *audit_pair(pair)) for pair in pairs]
    everything = [f for _, findings, _ in audited for f in findings]
    failure = _correct(everything, "failure", settings.q_level)
    host_type = _correct(everything, "host_type", settings.q_level)
    for f in everything:
        if f.judge is not None:
            f.verdict, f.reason = f.judge(f.qs)
    # The threshold a new finding would have needed in this family: BH's cut-off at the realized
    # number of discoveries (at least one).
    alpha = settings.q_level * max(1, failure["discoveries"]) / max(1, failure["size"])
    failure["detectable_alpha"] = alpha
    report_pairs = []
    for pair, findings, excluded in audited:
        report_pairs.append(
            {
                **_jsonable(pair.key),
                "n": int(pair.value.size),
                "verdict": _pair_verdict(findings),
                "detectable_effect": sig.detectable_effect(pair.value, alpha, settings.power),
                "excluded_trials": excluded,
                "checks": {f.check: f.to_dict() for f in findings},
            }
        )
    return report(settings, {"failure": failure, "host_type": host_type}, report_pairs)


def report(settings: AuditSettings, families: dict, pairs: list[dict]) -> dict:
    """The report's layout (schema 2: version 1 plus `settings`)."""
    return {
        "schema_version": 2,
        "q_level": settings.q_level,
        "min_successes": settings.min_successes,  # below it a pair is unassessed
        "settings": settings.to_dict(),
        "families": families,
        "pairs": pairs,
    }
