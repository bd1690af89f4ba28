"""Does the conformal guarantee hold on this data? The coverage family, and the checks that
respect series.

**The coverage family.** One rule, [`levy_core.metrics.covered`][levy_core.metrics.covered] (``lower <= y <= upper``,
bounds inclusive); every coverage number of the library is a share of it. Names follow one
scheme: ``<scope>_coverage`` is the coverage over a scope, ``coverage_<statistic>`` a
statistic of it. Signatures follow one convention: the data first (arrays ``y_true, lower,
upper`` or ``y_true, mean, sigma``; or a fitted model and its prediction frame), then the
level, a fraction in (0, 1) (``level=0.9``; several: ``levels=(0.8, 0.9)``). A percent
(``90``) is refused with a ValueError that says so; only [`levy_core.LevyForecaster`][levy_core.forecast.forecaster.LevyForecaster]
and its results take percents (docs/guides/python-api.md, "Levels: fractions and percents").

| function | the coverage of |
|---|---|
| `levy_core.metrics.covered(y_true, lower, upper)` | each point: the rule, bool (n,) |
| `levy_core.metrics.interval_coverage(y_true, lower, upper)` | one band: a share |
| `levy_core.metrics.coverage_standard_error(y_true, lower, upper, *, groups)` | its s.e. (binomial, or per series) |
| `levy_core.metrics.calibration_curve(y_true, mean, sigma, levels)` | Gaussian bands at many levels |
| `coverage_check(y_true, lower, upper, *, level, n_calibration, ...)` | one band against its window: `CoverageCheck` |
| `group_resplit_coverage(y_true, mean, sigma, groups, *, levels, ...)` | split conformal over re-drawn series-level splits |
| `levy_core.pipeline.coverage_checks(fitted, pred, *, levels)` | each method's band at each level (`coverage_check`) |
| `levy_core.pipeline.channel_coverage(fitted, pred, level)` | each method's band, per channel |
| `levy_core.pipeline.rolling_coverage(pred, *, window)` | each 90 % band over the test origins, in time |
| `levy_core.serving.monitoring.monitor_coverage(fitted, data, *, levels)` | a saved model's band on new data |
| `levy_core.LevyForecaster.evaluate(df, level=[80, 90])`, `.backtest(...)` | percents: `Evaluation.coverage`, per window |
| `coverage_note(y_true, lower, upper, *, level, groups)` | one band against its per-series s.e., in plain words: `CoverageNote` |

**Series, not queries.** Split conformal promises ``coverage >= level`` on average over the
draw of the calibration and test points, provided they are exchangeable. In a table of many
series the queries of one series share its difficulty (a patient whose every value
is hard to forecast), so what is exchangeable is the *series*, not the single query.
Two consequences, both measured here:

- the coverage of one fixed test split scatters around its level with the
  *per-series* standard error ([`levy_core.metrics.coverage_standard_error`][levy_core.metrics.coverage_standard_error]
  with ``groups``), often several times the binomial one -- a window built from
  the binomial s.e. rejects a valid band far more often than its nominal rate;
- the guarantee itself is checked by re-drawing the split at the series level
  ([`group_resplit_coverage`][levy_core.calibration.coverage.group_resplit_coverage]): the mean coverage over many random series-level
  calibration/test splits sits at the level.

[`coverage_check`][levy_core.calibration.coverage.coverage_check] gives, for one band on one test split, the coverage, its
standard error (binomial, or per series when ``groups`` is given; the calibration
draw's share included) and the window ``[level - z se, level + 1/(n_cal + 1) + z se]``
a valid conformal band falls in.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from levy_core import metrics
from levy_core.calibration.scores import DEFAULT_REL_FLOOR
from levy_core.calibration.split_conformal import SplitConformal
from levy_core.metrics.checks import check_gaussian, check_level, check_levels, group_codes

__all__ = ["WATCH_Z", "CoverageCheck", "CoverageNote", "coverage_check", "coverage_note", "group_resplit_coverage"]

#: Default width of the acceptance window, in standard errors.
DEFAULT_Z = 3.0
#: A coverage this many standard errors from its level is worth watching (not yet beyond chance).
WATCH_Z = 2.0


@dataclass(frozen=True)
class CoverageCheck:
    """The coverage of one band on one test split against its acceptance window
    ([`coverage_check`][levy_core.calibration.coverage.coverage_check])."""

    level: float
    coverage: float
    se_test: float  # s.e. of the test coverage: binomial, or per group with groups (the larger total)
    se: float  # total: the test's share and the calibration draw's share
    lower_bound: float  # level - z se
    upper_bound: float  # level + slack + z se
    n: int
    n_groups: int | None
    n_calibration: int
    calibration_groups: int | None
    z: float
    slack: float  # how far above the level split conformal may land: 1/(n_calibration + 1)

    @property
    def holds(self) -> bool:
        """Whether the coverage lies inside the window."""
        return self.lower_bound <= self.coverage <= self.upper_bound

    def to_dict(self) -> dict[str, float | int | bool | None]:
        return {**asdict(self), "holds": self.holds}


def coverage_check(
    y_true: ArrayLike,
    lower: ArrayLike,
    upper: ArrayLike,
    *,
    level: float,
    n_calibration: int,
    groups: ArrayLike | None = None,
    calibration_groups: int | None = None,
    z: float = DEFAULT_Z,
    slack: float | None = None,
) -> CoverageCheck:
    """Coverage of ``[lower, upper]`` and the window a valid conformal band lies in.

    The conformal coverage of a test split moves with two draws: which points are in the
    test split (``se_test``: binomial, or per group with ``groups``) and which points
    calibrate the quantile. The second share is the same quantity measured on the calibration
    split; assuming it is as heterogeneous as the test split it is
    ``se_test * sqrt(units_test / units_cal)`` (units: points, or groups), so
    ``se = se_test * sqrt(1 + units_test / units_cal)``. With ``groups`` the per-group
    ``se`` is used unless the binomial one is larger (the sandwich estimate is biased low
    with few groups). The window is
    ``[level - z se, level + slack + z se]`` with ``slack = 1/(n_calibration + 1)``.

    Parameters
    ----------
    y_true, lower, upper : array-like, shape (n,)
        Test targets and the band (bounds may be infinite).
    level : float
        The band's nominal level in (0, 1).
    n_calibration : int
        Calibration points the band was conformalized on.
    groups : array-like, shape (n,), optional
        Series label per test point: the standard errors become per-series ones.
    calibration_groups : int, optional
        Number of series in the calibration split; required with ``groups``.
    z : float, default 3
        Width of the window in standard errors.
    slack : float, optional
        The upper slack when the band's quantiles came from calibration sets of different
        sizes (per-group conformal: the test points' mean of ``1/(n_g + 1)``).

    Returns
    -------
    CoverageCheck
    """
    level = check_level(level)
    if n_calibration < 1:
        raise ValueError(f"n_calibration must be at least 1, got {n_calibration}")
    if not (math.isfinite(z) and z > 0):
        raise ValueError(f"z must be a positive number, got {z!r}")
    cov = metrics.interval_coverage(y_true, lower, upper)
    n = int(np.asarray(y_true).shape[0])
    se_test = metrics.coverage_standard_error(y_true, lower, upper)
    se = se_test * math.sqrt(1.0 + n / n_calibration)
    n_groups = None
    if groups is not None:
        if calibration_groups is None or calibration_groups < 1:
            raise ValueError("with groups, give calibration_groups: the number of series in the calibration split")
        n_groups = len(group_codes(groups, n)[1])
        se_series = metrics.coverage_standard_error(y_true, lower, upper, groups=groups)
        total = se_series * math.sqrt(1.0 + n_groups / calibration_groups)
        # never below the binomial s.e.: the sandwich estimate is biased low with few groups
        # (8 test series can give half the binomial value), while a series' queries are, if
        # anything, positively correlated
        if total > se:
            se_test, se = se_series, total
    slack = 1.0 / (n_calibration + 1) if slack is None else float(slack)
    if not (math.isfinite(slack) and 0 <= slack < 1):
        raise ValueError(f"slack must lie in [0, 1), got {slack!r}")
    return CoverageCheck(level, cov, se_test, se, level - z * se, level + slack + z * se,
                         n, n_groups, int(n_calibration), None if groups is None else int(calibration_groups),
                         float(z), slack)


def group_resplit_coverage(
    y_true: ArrayLike,
    mean: ArrayLike,
    sigma: ArrayLike,
    groups: ArrayLike,
    *,
    levels: ArrayLike = (0.5, 0.8, 0.9, 0.95),
    n_splits: int = 200,
    calibration_fraction: float = 0.5,
    seed: int = 0,
    rel_floor: float = DEFAULT_REL_FLOOR,
    by: ArrayLike | None = None,
) -> pd.DataFrame:
    """Split conformal re-run on ``n_splits`` random series-level calibration/test splits.

    Each split sends a random ``calibration_fraction`` of the groups to calibration,
    conformalizes on their points (the same score ``|y - ŷ| / σ̂`` as
    [`SplitConformal`][levy_core.calibration.split_conformal.SplitConformal]) and measures the coverage of the other
    groups' points. Under series-level exchangeability the mean over splits sits at
    (or, by at most about ``1/(n_cal + 1)``, above) each level; ``sd`` is how far a
    single split strays.

    Parameters
    ----------
    y_true, mean, sigma : array-like, shape (n,)
        Points that were *not* used to train the model (e.g. calibration + test).
    groups : array-like, shape (n,)
        Series label per point; at least two distinct labels.
    levels : array-like, shape (L,)
    n_splits : int, default 200
    calibration_fraction : float, default 0.5
        Share of the groups that calibrate in each split.
    seed : int, default 0
    rel_floor : float
        σ̂ floor of the conformal score (as ``SplitConformal``).
    by : array-like, shape (n,), optional
        Conformalize per ``by`` label (e.g. channel), as ``SplitConformal(groups=...)``.

    Returns
    -------
    pandas.DataFrame
        One row per level: ``level, mean_coverage, sd, min, max, n_splits``.
    """
    y, mu, s = check_gaussian(y_true, mean, sigma)
    lv = check_levels(levels)
    codes, uniques = group_codes(groups, y.size)
    n_groups = len(uniques)
    n_cal_groups = int(round(calibration_fraction * n_groups))
    if not 0 < calibration_fraction < 1 or not 1 <= n_cal_groups < n_groups:
        raise ValueError(f"calibration_fraction {calibration_fraction!r} of {n_groups} groups must leave at "
                         "least one group on each side")
    if n_splits < 1:
        raise ValueError(f"n_splits must be at least 1, got {n_splits}")
    # validated and coded once here, not on every split
    by_labels = None if by is None else group_codes(by, y.size, "by")[0]
    rng = np.random.default_rng(seed)
    cov = np.empty((n_splits, lv.size))
    for r in range(n_splits):
        is_cal = np.zeros(n_groups, dtype=bool)
        is_cal[rng.permutation(n_groups)[:n_cal_groups]] = True
        cal = is_cal[codes]
        sc = SplitConformal(rel_floor).conformalize(y[cal], mu[cal], s[cal],
                                                    groups=None if by_labels is None else by_labels[cal])
        test = ~cal
        for j, level in enumerate(lv):
            lo, hi = sc.predict_interval(mu[test], s[test], float(level),
                                         groups=None if by_labels is None else by_labels[test])
            cov[r, j] = metrics.interval_coverage(y[test], lo, hi)
    return pd.DataFrame({"level": lv, "mean_coverage": cov.mean(axis=0),
                         "sd": cov.std(axis=0, ddof=1) if n_splits > 1 else np.zeros(lv.size),
                         "min": cov.min(axis=0), "max": cov.max(axis=0), "n_splits": n_splits})


@dataclass(frozen=True)
class CoverageNote:
    """How far one band's coverage lies from its level, in standard errors over series
    ([`coverage_note`][levy_core.calibration.coverage.coverage_note]); ``text`` is the sentence to show, None when within chance."""

    level: float
    coverage: float
    se: float  # over series: the s.d. of the series' own coverages / sqrt(n_groups), never below the binomial
    n_queries: int
    n_groups: int
    unit: str  # what a group is, plural ("series", "windows", …)
    z: float  # (coverage - level) / se
    verdict: str  # "within", "worth watching" (|z| > WATCH_Z) or "outside" (|z| > DEFAULT_Z)
    text: str | None

    def to_dict(self) -> dict[str, float | int | str | None]:
        return asdict(self)


def coverage_note(y_true: ArrayLike, lower: ArrayLike, upper: ArrayLike, *, level: float,
                  groups: ArrayLike | None = None, unit: str = "series", what: str = "test queries",
                  z: float = DEFAULT_Z, watch_z: float = WATCH_Z) -> CoverageNote:
    """Whether a band's coverage lies further from its level than chance allows, said in
    plain words with what to do.

    The standard error is taken over series, as ``benchmarks/unseen.py`` reports "coverage ±
    s.e. over stays": each series' own coverage counts once (its queries are correlated),
    ``se = sd(per-series coverage) / sqrt(G)``; it is never taken below the binomial s.e.
    of the ``n`` queries (the per-series one is biased low with few series, and is 0 when
    every series covers alike), and is the binomial one alone without ``groups`` or with a
    single group. ``|coverage − level| > z·se`` is "outside" (a note that the band falls
    short, or is wider than it needs to be), ``> watch_z·se`` "worth watching".

    Parameters
    ----------
    y_true, lower, upper : array-like, shape (n,)
        Held-out targets and the band (bounds may be infinite); n ≥ 1.
    level : float
        The band's nominal level, a fraction in (0, 1).
    groups : array-like, shape (n,), optional
        The series (or other independent unit) of each query.
    unit : str
        What a group is, plural, for the sentence ("series", "windows").
    what : str
        What the queries are, for the sentence ("test queries", "backtest queries").
    z, watch_z : float
        The thresholds in standard errors, ``z > watch_z > 0``.

    Returns
    -------
    CoverageNote
    """
    level = check_level(level)
    if not (math.isfinite(z) and math.isfinite(watch_z) and 0 < watch_z < z):
        raise ValueError(f"need 0 < watch_z < z, got watch_z={watch_z!r}, z={z!r}")
    inside = metrics.covered(y_true, lower, upper).astype(np.float64)
    n = inside.size
    if n < 1:
        raise ValueError("coverage_note needs at least one query")
    cov = float(inside.mean())
    se = math.sqrt(max(cov * (1.0 - cov), 1.0 / n) / n)  # binomial; one success or miss at least
    n_groups = 1
    if groups is not None:
        codes, uniques = group_codes(groups, n)
        n_groups = len(uniques)
        if n_groups > 1:
            per = np.bincount(codes, weights=inside, minlength=n_groups) / np.bincount(codes, minlength=n_groups)
            se = max(se, float(per.std(ddof=1) / math.sqrt(n_groups)))
    score = (cov - level) / se
    verdict = "outside" if abs(score) > z else "worth watching" if abs(score) > watch_z else "within"
    return CoverageNote(level, cov, se, n, n_groups, unit if n_groups > 1 else "queries", float(score), verdict,
                        None if verdict == "within" else _note_text(level, cov, se, n, n_groups, unit, what, verdict))


def _note_text(level: float, cov: float, se: float, n: int, n_groups: int, unit: str, what: str,
               verdict: str) -> str:
    over = f"{n_groups} {unit}" if n_groups > 1 else f"{n} queries, taken as independent"
    below = cov < level
    head = (f"The {100 * level:g} % band covered {cov:.2f} of the {what} (± {se:.2f} over {over}): "
            f"{'below' if below else 'above'} its level ")
    if verdict == "outside":
        head += "by more than chance allows."
    else:
        head += f"by more than {WATCH_Z:g} standard errors: worth watching, not yet beyond chance."
    if below:
        todo = ("calibrate on more series (more calibration series, or a longer history per series), refit on "
                "recent data if the series drift (`levy evaluate` reports drift), and on a few series that drift "
                "use the adaptive band (`--band adaptive`, `band=\"adaptive\"`); until then read the band as "
                f"covering about {cov:.2f}, not {level:.2f}.")
    else:
        todo = ("the band is wider than it needs to be: more calibration series give a tighter quantile; "
                "if the test data are easier than the calibration data (calmer series, shorter leads), "
                "calibrate on data like them.")
    return f"{head} What to do: {todo}"
