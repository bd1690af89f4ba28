"""Offline study of the rolling-origin offset ``b(q)``: the shipped candidates and new ones,
scored on the held-out windows of ``benchmarks/anchors.py``.

(Written on 2026-12-03, before Holt's trend was shipped and the residual-AR candidates
``harmonic*_ar`` were added: it re-implements the scoring of that day. For selection rules
over the current candidates, through the library's own scoring, see
``benchmarks/studies/offset_rules.py``.)

On one series the forecast is almost exactly the classical offset that
:func:`levy_core.offsets.base_forecast.choose_offsets` picks per channel (the Lévy layer on
top seldom moves it), so a better offset is a better forecast. For each anchors series and
end point (the loaders and :func:`anchors.split` are imported, not copied):

1. ``LevyForecaster(seed=0, horizon=H).fit(train)`` is run up to the offset choice only:
   :func:`levy_core.pipeline.recipe.choose_base_forecast` and the ``choose`` it calls are
   wrapped, their arguments (the normalised past before the first test origin, the origins,
   the scored episodes, the scaler) kept, the shipped spec recorded, and the fit stopped
   there (no network is trained).
2. The scoring loop of ``choose_offsets`` is re-run on the same later half of the episodes
   with every shipped candidate (the library's own ``forecast``, ``bounded``, AR order,
   damped-trend parameters and GP kernel, fitted as the fit fits them) and the new ones
   below; the shipped rule (simplest unless ``SIMPLER_MARGIN`` better, then the mean of
   the best ``COMBINED`` when that is better still) is re-applied with the new candidates
   inserted in the complexity order ``ORDER``: all of them (``all_new``), each one alone
   (``+name``), the capped harmonic candidates in place of the shipped ones (``~oK``),
   those with ``gp_sk``, ``gp_sk`` in place of ``gp`` (``gp=sk``), and (``-trend``) no
   harmonic candidate on a channel without a candidate period (there they are Prophet's
   trend alone and a line through the last third). The re-applied shipped rule is checked
   against the fit's own pick.
3. Every candidate, the shipped pick and each rule's pick forecast the held-out window
   ``(end, end + H]`` from the whole training part (origin: the series' last training
   time), and are scored there: MAE in the data's units, MSE in the fit's normalised
   units (min-max of the training part).

New candidates (each deterministic; parameters fitted once per channel on the past before
the first scored origin, as the damped trend and the GP are, unless said otherwise):

* ``ses``: simple exponential smoothing, ETS(A,N,N), on the regular grid of the median
  step, ``α`` from ``ALPHAS`` by the one-step squared error;
* ``ses_origin``: the same with ``α`` refitted at every origin on its own past;
* ``theta``: the Theta method (Hyndman & Billah 2003): ``ses`` plus half the slope of the
  least-squares line through the gridded past, ``ŷ_h = ℓ_n + b/2 (h − 1 + 1/α − (1−α)^n/α)``;
* ``holt``: Holt's linear trend (``φ = 1``), ``(α, β)`` on the grid of the damped trend;
* ``seasonal_mean``: the mean of the values ``SEASONS`` seasons back (``t_q − kP``, the
  ``k`` of ``seasonal`` and the next ones), per candidate period;
* ``harmonic~oK``, ``harmonic_level~oK``, ``harmonic_recent~oK`` (``oK`` in ``CAPS``): the
  library's own harmonic candidates with at most K sine-cosine pairs per period (shipped,
  ``harmonics_of``: Prophet's 10 for a year, 3 for a week, 4 otherwise; all below the
  Nyquist frequency); ``~u10``: at least 10 (more terms for a day or a week); the rules
  ``~oK``, ``~u10`` put them in place of the shipped ones;
* ``gp_sk``: the posterior mean of the anchors' scikit-learn GP kernel
  (``anchors.gp_kernel``: time in horizons, ``normalize_y``, the strongest candidate
  period) fitted on the latest ``GP_FIT_POINTS`` observations before the first scored
  origin; each origin conditions on its latest ``GP_FIT_POINTS``.

Output: held-out MAE per series (with the anchors' other rows' MAE from ``--reference``
beside), held-out normalised MSE per series ÷ the shipped pick's, each rule's geometric mean
ratio and wins/losses over the (series, end, channel) rows, the picks, and seconds. About
4 minutes single-threaded for the 10 series x 3 ends.

Dates over more than 292 years (sunspots) need pandas 3: under pandas 2 the library's
``hours_since_first`` overflows (see ``benchmarks/results/offset_study_2026-12-03.txt``).

Usage (single-threaded; the anchors extras, for ``vega_datasets`` and ``statsmodels``)::

    OMP_NUM_THREADS=1 python benchmarks/studies/offset_study.py [--only nile sunspots] [--ends 3]
        [--out benchmarks/results/offset_study.txt] [--rows rows.csv] [--header "# ..."]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from levy_core.offsets import base_forecast as bf
from levy_core.offsets import harmonic, smoothing
from levy_core.offsets.seasonality import candidate_periods, median_gap

if __package__ in (None, ""):  # run as a script: the repository root holds the benchmarks package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import anchors  # noqa: E402

NEW = ("ses", "ses_origin", "theta", "holt", "seasonal_mean", "gp_sk")
CAPS = ("o2", "o3", "o5", "u10")  # ``harmonic~oK``: at most K sine-cosine pairs per period; ``~uK``: at least K
# the shipped METHODS with the new ones inserted by complexity (the margin rule reads this order;
# a capped harmonic candidate sits where its shipped one does)
ORDER = ("last", "level", "ses", "ses_origin", "drift", "theta", "damped_trend", "holt", "seasonal",
         "seasonal_drift", "seasonal_mean", "autoregressive", "harmonic_level", "harmonic", "harmonic_recent",
         "gp", "gp_sk")
ALPHAS = np.round(np.arange(0.02, 1.0001, 0.02), 2)
SEASONS = 3
GP_FIT_POINTS = 500
HOUR_DAYS = 1 / 24


# ---------------------------------------------------------------------------------------
# the new candidates: (t, y) one channel's normalised past (hours, sorted, ≤ origin)


def ses_fit(z: np.ndarray) -> tuple[float, np.ndarray]:
    """The α of ``ALPHAS`` with the least one-step squared error over the grid ``z`` (n,),
    and the final level of each α (len(ALPHAS),)."""
    z = z[-smoothing.MAX_STEPS:]
    level = np.full(len(ALPHAS), z[0])
    sse = np.zeros(len(ALPHAS))
    for value in z[1:]:
        sse += (value - level) ** 2
        level = ALPHAS * value + (1 - ALPHAS) * level
    best = int(np.argmin(sse))
    return float(ALPHAS[best]), level


def ses_level(z: np.ndarray, alpha: float) -> float:
    z = z[-smoothing.MAX_STEPS:]
    level = float(z[0])
    for value in z[1:].tolist():
        level = alpha * value + (1 - alpha) * level
    return level


def theta(z: np.ndarray, alpha: float, origin: float, tq: np.ndarray, gap: float) -> np.ndarray:
    n = len(z[-smoothing.MAX_STEPS:])
    slope = float(np.polyfit(np.arange(len(z)), z, 1)[0]) if len(z) >= 3 else 0.0
    h = np.maximum((tq - origin) / gap, 0.0)
    return ses_level(z, alpha) + slope / 2 * (h - 1 + 1 / alpha - (1 - alpha) ** n / alpha)


def holt_fit(z: np.ndarray) -> tuple[float, float, float] | None:
    z = z[-smoothing.MAX_STEPS:]
    if len(z) < smoothing.MIN_STEPS:
        return None
    grid = np.array(list(itertools.product(smoothing.ALPHAS, smoothing.BETAS)), np.float64)
    _, _, sse = smoothing.run(z, grid[:, 0], grid[:, 1], np.ones(len(grid)))
    a, b = grid[int(np.argmin(sse))]
    return float(a), float(b), 1.0


def seasonal_mean(t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray, period: float) -> np.ndarray:
    """The mean over j < SEASONS of the past at ``t_q − (k + j)P`` (``k`` as ``seasonal``),
    read off the line between neighbours; seasons before the past are left out."""
    k = np.maximum(np.ceil((tq - origin) / period), 1.0)
    reads = []
    for j in range(SEASONS):
        tau = tq - (k + j) * period
        reads.append(np.where(tau >= t[0], np.interp(tau, t, y), np.nan))
    stacked = np.vstack(reads)
    have = np.isfinite(stacked).any(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.where(have, np.nanmean(stacked, axis=0), y[-1])


@dataclass
class SkGP:
    """The anchors' GP kernel fitted once (time in horizons); posterior means at origins."""

    kernel: object
    unit: float

    @classmethod
    def fit(cls, t: np.ndarray, y: np.ndarray, period: float | None, unit: float, gap: float) -> SkGP | None:
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.gaussian_process import GaussianProcessRegressor
        t, y = t[-GP_FIT_POINTS:], y[-GP_FIT_POINTS:]
        if len(t) < 12:
            return None
        x = ((t - t[-1]) / unit)[:, None]
        kernel = anchors.gp_kernel(float(x[-1, 0] - x[0, 0]), gap / unit, period / unit if period else None)
        gpr = GaussianProcessRegressor(kernel=kernel, normalize_y=True, n_restarts_optimizer=0, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            gpr.fit(x, y)
        return cls(gpr.kernel_, unit)

    def mean(self, t: np.ndarray, y: np.ndarray, tq: np.ndarray) -> np.ndarray:
        t, y = t[-GP_FIT_POINTS:], y[-GP_FIT_POINTS:]
        if len(t) < 12:
            return np.full(len(tq), y[-1])
        x, xq = ((t - t[-1]) / self.unit)[:, None], ((tq - t[-1]) / self.unit)[:, None]
        mu, sd = float(y.mean()), float(np.std(y)) or 1.0
        gram = self.kernel(x)
        gram[np.diag_indices_from(gram)] += 1e-10
        try:
            factor = np.linalg.cholesky(gram)
        except np.linalg.LinAlgError:
            return np.full(len(tq), y[-1])
        alpha = np.linalg.solve(factor.T, np.linalg.solve(factor, (y - mu) / sd))
        return mu + sd * (self.kernel(xq, x) @ alpha)


@dataclass
class ChannelFit:
    """One channel's fitted parameters (shipped and new), from its past before ``first``."""

    order: int = 0
    kernel: object = None
    damped: tuple[float, float, float] | None = None
    alpha: float | None = None
    holt: tuple[float, float, float] | None = None
    skgp: SkGP | None = None


@dataclass
class Context:
    periods: tuple[float, ...]
    gap: float
    horizon: float  # hours
    channels: dict[str, ChannelFit] = field(default_factory=dict)


def fit_channels(past: pd.DataFrame, first: float, ctx: Context) -> None:
    """The shipped per-channel parameters (``choose_offsets``' own code) and the new ones."""
    longest = max(ctx.periods, default=0.0)
    richest: dict[str, bf.ChannelPast] = {}
    for (_, channel), g in past.groupby(["series_id", "channel"], sort=False):
        p = bf.ChannelPast(g["time"].to_numpy(np.float64), g["value"].to_numpy(np.float64))
        if str(channel) not in richest or len(p.t) > len(richest[str(channel)].t):
            richest[str(channel)] = p
    kernels, damped, _ = bf.fitted_parameters(richest, first, ctx.periods, ctx.gap, few=True)
    for channel, p in richest.items():
        fit = ChannelFit(damped=damped.get(channel), kernel=kernels.get(channel))
        if len(p.t) >= 30:
            fit.order = bf.ar_order(p.t[-bf.MAX_PAST:], p.y[-bf.MAX_PAST:], ctx.gap, longest)
        t, y = p.before(first)
        if len(t) >= 2:
            z = bf.regular_grid(t, y, float(t[-1]), ctx.gap)
            fit.alpha = ses_fit(z)[0]
            fit.holt = holt_fit(z)
            fit.skgp = SkGP.fit(t, y, ctx.periods[0] if ctx.periods else None, ctx.horizon, ctx.gap)
        ctx.channels[channel] = fit


def candidates(ctx: Context) -> list[tuple[str, float]]:
    names = [("last", 0.0), ("level", 0.0), ("drift", 0.0)]
    names += [(m, p) for p in ctx.periods for m in bf.SEASONAL]
    names += [(m, 0.0) for m in bf.HARMONIC if ctx.periods or m != "harmonic_level"]
    names += [("autoregressive", 0.0), ("gp", 0.0), ("damped_trend", 0.0)]
    names += [(m, 0.0) for m in NEW if m != "seasonal_mean"] + [("seasonal_mean", p) for p in ctx.periods]
    # without a period the caps change nothing: the trend-only candidates, under the rules' names
    names += [(f"{m}~{k}", 0.0) for k in CAPS for m in bf.HARMONIC if ctx.periods or m != "harmonic_level"]
    return names


def predict(key: tuple[str, float], t: np.ndarray, y: np.ndarray, origin: float, tq: np.ndarray,
            ctx: Context, fit: ChannelFit) -> np.ndarray | None:
    """One candidate's bounded forecast (None: not a candidate of this channel)."""
    method, period = key
    if method == "autoregressive" and not fit.order or method == "gp" and fit.kernel is None or (
            method == "damped_trend" and fit.damped is None):
        return None
    if "~" in method:  # the library's own harmonic candidate with its orders capped (or raised)
        base, cap = method.split("~")
        shipped, k = harmonic.harmonics_of, int(cap[1:])
        harmonic.harmonics_of = ((lambda period, gap: min(shipped(period, gap), k)) if cap[0] == "o" else
                           lambda period, gap: max(shipped(period, gap), min(k, int((period / gap - 1) / 2))))
        try:
            out = bf.forecast(base, t, y, origin, tq, harmonics=ctx.periods, gap=ctx.gap)
        finally:
            harmonic.harmonics_of = shipped
        return bf.bounded(t, y, out)
    if method in bf.METHODS:  # holt is shipped too (since the development set chose it): the study's own fit
        if method == "holt" and fit.holt is None:
            return None
        out = bf.forecast(method, t, y, origin, tq, period=period, harmonics=ctx.periods, gap=ctx.gap,
                          order=fit.order, gp=fit.kernel,
                          smoothing_parameters=fit.holt if method == "holt" else fit.damped)
        return bf.bounded(t, y, out)
    if fit.alpha is None:
        return None
    if len(t) < 2:
        return np.full(len(tq), y[-1])
    z = bf.regular_grid(t, y, origin, ctx.gap)
    if method == "ses":
        out = np.full(len(tq), ses_level(z, fit.alpha))
    elif method == "ses_origin":
        out = np.full(len(tq), ses_level(z, ses_fit(z)[0]) if len(z) >= 3 else y[-1])
    elif method == "theta":
        out = theta(z, fit.alpha, origin, tq, ctx.gap)
    elif method == "holt":
        if fit.holt is None:
            return None
        path = smoothing.forecast(z, fit.holt, int(np.ceil(max(float(np.max(tq)) - origin, 0.0) / ctx.gap)) + 1)
        out = np.interp(tq, origin + ctx.gap * np.arange(len(path)), path)
    elif method == "seasonal_mean":
        out = seasonal_mean(t, y, origin, tq, period)
    elif method == "gp_sk":
        if fit.skgp is None:
            return None
        out = fit.skgp.mean(t, y, tq)
    else:
        raise ValueError(method)
    return bf.bounded(t, y, out)


# ---------------------------------------------------------------------------------------
# the rule


def select(mse: dict[tuple[str, float], float], combined: Callable[[list], float],
           allowed: Callable[[str, bool], bool], periodic: bool) -> list[tuple[str, float]]:
    """The shipped rule over the candidates ``allowed`` (``mse``: each one's squared error on
    the scored origins; ``combined``: that of the mean of several): the members of the pick
    (one, or the ``COMBINED`` best when their mean beats the margin rule's pick by the margin)."""
    keys = [k for k in mse if allowed(k[0], periodic)]
    ordered = sorted(keys, key=lambda k: (ORDER.index(k[0].split("~")[0]), k[1]))
    best = ordered[0]
    for key in ordered[1:]:
        if mse[key] < (1 - bf.SIMPLER_MARGIN) * mse[best]:
            best = key
    top = sorted(keys, key=lambda k: mse[k])[:bf.COMBINED]
    if len(top) >= 2 and combined(top) < (1 - bf.SIMPLER_MARGIN) * mse[best]:
        return top
    return [best]


TOPS = (2, 3, 5)


def top_k(mse: dict[tuple[str, float], float], allowed: Callable[[str, bool], bool], periodic: bool,
          k: int) -> list[tuple[str, float]]:
    """The ``k`` candidates ``allowed`` with the smallest squared error on the scored origins."""
    return sorted((key for key in mse if allowed(key[0], periodic)), key=lambda key: mse[key])[:k]


def label(members: list[tuple[str, float]]) -> str:
    return "+".join(m for m, _ in members) if len(members) > 1 else members[0][0]


def _rule(added: Sequence[str] = (), cap: str | None = None, trend_only: bool = True,
          dropped: Sequence[str] = ()) -> Callable[[str, bool], bool]:
    """The candidates of a rule, given whether the channel has a candidate period: the
    shipped ones but ``dropped``, and ``added``; with ``cap``, the harmonic ones with their
    orders capped in place of the shipped harmonic ones; without ``trend_only``, no harmonic
    candidate at all where there is no period (there it is Prophet's trend alone, or a line
    through the last third)."""
    def allowed(m: str, periodic: bool) -> bool:
        if m in dropped or m.split("~")[0] in bf.HARMONIC and not (trend_only or periodic):
            return False
        if cap is not None and m.split("~")[0] in bf.HARMONIC:
            return m.endswith(f"~{cap}")
        return m in bf.METHODS or m in added
    return allowed


RULES = {"shipped": _rule(), "all_new": _rule(NEW), **{f"+{n}": _rule((n,)) for n in NEW},
         **{f"~{k}": _rule(cap=k) for k in CAPS}, **{f"~{k}+gp_sk": _rule(("gp_sk",), k) for k in CAPS[:2]},
         "-trend": _rule(trend_only=False), "~o2-trend": _rule(cap="o2", trend_only=False),
         "~o2+gp_sk-trend": _rule(("gp_sk",), "o2", trend_only=False),
         "gp=sk": _rule(("gp_sk",), dropped=("gp",)), "~o2,gp=sk-trend": _rule(("gp_sk",), "o2", False, ("gp",))}


# ---------------------------------------------------------------------------------------
# one (series, end)


class _Stop(Exception):
    pass


ALL_ORIGINS = False  # --origins all: the choice also sees the fit's own test origins (the latest)


def capture(case, train: pd.DataFrame, test: pd.DataFrame) -> dict:
    """The fit's offset choice, its inputs and scaler; the fit stopped right after it (with
    ``ALL_ORIGINS``: made as if the fit's test origins were calibration ones)."""
    from levy_core import LevyForecaster
    from levy_core.pipeline import recipe
    got: dict = {}
    inner, outer = recipe.choose, recipe.choose_base_forecast

    def choose(past, origins, episodes, *, season=None):
        got.update(past=past, origins=origins, episodes=episodes, season=season)
        got["spec"] = inner(past, origins, episodes, season=season)
        return got["spec"]

    def choose_base_forecast(builder, ids, split, scaler, user_frame, origin_of, season):
        if ALL_ORIGINS:
            import dataclasses
            ids = list(dict.fromkeys(ids + builder.usable(split.test)))
            split = dataclasses.replace(split, test=[])
        outer(builder, ids, split, scaler, user_frame, origin_of, season)
        got.update(scaler=scaler, user_frame=user_frame)
        raise _Stop

    recipe.choose, recipe.choose_base_forecast = choose, choose_base_forecast
    try:
        LevyForecaster(seed=0, horizon=case.horizon_text).fit(anchors.levy_frames(case, train, test)[0])
    except _Stop:
        pass
    finally:
        recipe.choose, recipe.choose_base_forecast = inner, outer
    return got


def study_fold(case, k: int) -> list[dict]:
    """Per channel of one (series, end): the rules' picks and every forecast's held-out errors."""
    train, test, end = anchors.split(case, k)
    t0 = time.perf_counter()
    got = capture(case, train, test)
    spec, past, origins, episodes = got["spec"], got["past"], got["origins"], got["episodes"]
    seconds_ship = time.perf_counter() - t0
    t0 = time.perf_counter()
    periods = candidate_periods(past) if got["season"] is None else (
        (float(got["season"]),) if got["season"] > 0 else ())
    ctx = Context(tuple(periods), median_gap(past["time"].to_numpy(np.float64)) or 1.0,
                  anchors._horizon_days(case, end) / HOUR_DAYS)
    assert ctx.periods == spec.harmonics and ctx.gap == spec.gap
    by_time = sorted(episodes, key=lambda m: (origins[m][1], m))
    scored = by_time[len(by_time) // 2:] if len(by_time) >= 2 * bf.MIN_SCORED_ORIGINS else by_time
    fit_channels(past, origins[scored[0]][1], ctx)
    seconds_fit = time.perf_counter() - t0
    pasts = {(str(s), str(c)): bf.ChannelPast(g["time"].to_numpy(np.float64), g["value"].to_numpy(np.float64))
             for (s, c), g in past.groupby(["series_id", "channel"], sort=False)}
    names = candidates(ctx)
    recs: dict[str, list] = {}
    t0 = time.perf_counter()
    for model_id in scored:
        sid, origin = origins[model_id]
        for channel, q in episodes[model_id].groupby("channel", sort=False):
            p = pasts.get((str(sid), str(channel)))
            if p is None:
                continue
            t, y = p.before(origin)
            if not len(t):
                continue
            tq, yq = q["time"].to_numpy(np.float64), q["value"].to_numpy(np.float64)
            preds = {key: predict(key, t, y, origin, tq, ctx, ctx.channels[str(channel)]) for key in names}
            recs.setdefault(str(channel), []).append(({k: v for k, v in preds.items() if v is not None}, yq))
    seconds_score = time.perf_counter() - t0
    rows = []
    full = got["scaler"].transform(got["user_frame"])
    lo, hi = got["scaler"].minimum, got["scaler"].maximum
    t_first = anchors._days(train["time"]).min()
    for channel, rr in recs.items():
        count = max(sum(len(yq) for _, yq in rr), 1)
        keys = list(rr[0][0])
        mse = {key: sum(float(np.sum((p[key] - yq) ** 2)) for p, yq in rr) / count for key in keys}

        def combined(members, rr=rr, count=count):
            return sum(float(np.sum((np.mean([p[m] for m in members], axis=0) - yq) ** 2))
                       for p, yq in rr) / count

        picks = {rule: select(mse, combined, ok, bool(ctx.periods)) for rule, ok in RULES.items()}
        # the shipped rule judged by absolute error (what CRPS and MAE reward) instead of squared
        mae = {key: sum(float(np.sum(np.abs(p[key] - yq))) for p, yq in rr) / count for key in keys}

        def combined_abs(members, rr=rr, count=count):
            return sum(float(np.sum(np.abs(np.mean([p[m] for m in members], axis=0) - yq)))
                       for p, yq in rr) / count

        picks["abs"] = select(mae, combined_abs, RULES["shipped"], bool(ctx.periods))
        # always the mean of the k best shipped candidates (no single pick: combinations of
        # forecasters chosen on few origins are known to beat the one chosen)
        for k_top in TOPS:
            picks[f"top{k_top}"] = top_k(mse, RULES["shipped"], bool(ctx.periods), k_top)
        shipped = ([tuple(m) for m in spec.members[channel]] if spec.methods[channel] == "combination"
                   else [(spec.methods[channel], spec.periods.get(channel, 0.0))])
        # held out: from the whole training part, the series' last time as the origin
        g = full[full["channel"] == channel]
        p = bf.ChannelPast(g["time"].to_numpy(np.float64), g["value"].to_numpy(np.float64))
        origin = float(full["time"].max())
        tt, yy = p.before(origin)
        te = test if len(case.channels) == 1 else test[test["channel"] == channel]  # one: fitted as "value"
        if te.empty:
            continue
        tq = (anchors._days(te["time"]) - t_first) / HOUR_DAYS
        ytrue = te["value"].to_numpy(np.float64)
        span = hi[channel] - lo[channel]
        fc = {key: predict(key, tt, yy, origin, tq, ctx, ctx.channels[channel]) for key in keys}
        row = {"series": case.name, "end": k, "channel": channel, "n": len(ytrue), "n_scored": len(rr),
               "periods": ", ".join(f"{x:g}" for x in ctx.periods), "seconds_ship": seconds_ship,
               "seconds_fit_new": seconds_fit, "seconds_score": seconds_score,
               "ship_check": label(picks["shipped"]) == label(shipped)}

        def errors(members, fc=fc, ytrue=ytrue, span=span, channel=channel):
            pred = np.mean([fc[m] for m in members], axis=0) * span + lo[channel]
            return float(np.sum(np.abs(pred - ytrue))), float(np.sum(((pred - ytrue) / span) ** 2))

        for key in keys:  # a period's candidates by rank: seasonal (the first period), seasonal#2, …
            name = key[0] + (f"#{ctx.periods.index(key[1]) + 1}" if key[1] and key[1] != ctx.periods[0] else "")
            row[f"ae:{name}"], row[f"se:{name}"] = errors([key])
            row[f"val:{name}"] = mse[key]
        row["ae:(shipped)"], row["se:(shipped)"] = errors(shipped)
        row["pick:(shipped)"] = label(shipped)
        for rule, members in picks.items():
            row[f"ae:[{rule}]"], row[f"se:[{rule}]"] = errors(members)
            row[f"pick:[{rule}]"] = label(members)
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------
# the report

PICKS_SHOWN = ("all_new", "+gp_sk", "~o2", "-trend", "~o2+gp_sk-trend", "gp=sk", "~o2,gp=sk-trend")
REFERENCE = ("GP (sklearn)", "Prophet", "AutoETS", "seasonal naive", "s. naive + drift", "Lévy")


def reference_mae(path: Path) -> pd.DataFrame:
    """The anchors' MAE of the other rows per series (first table of a results file)."""
    rows = []
    if path.exists():
        for line in path.read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("===") and rows:
                break
            if len(cells) == 9 and cells[1] in REFERENCE:
                rows.append({"series": cells[0], "row": f"<anchors {cells[1]}>", "mae": float(cells[4])})
    return pd.DataFrame(rows, columns=["series", "row", "mae"])


def tables(rows: pd.DataFrame, reference: pd.DataFrame) -> list[str]:
    order = list(dict.fromkeys(rows["series"]))
    forecasts = [c[3:] for c in rows.columns if c.startswith("ae:")]
    se = rows[[f"se:{f}" for f in forecasts]].to_numpy() / rows[["n"]].to_numpy()
    derived = np.array([f[0] in "([" for f in forecasts])  # the picks, not candidates
    best = np.nanargmin(np.where(derived[None, :], np.inf, se), axis=1)
    rows = rows.assign(**{"ae:(hindsight best)": rows[[f"ae:{f}" for f in forecasts]].to_numpy()[
        np.arange(len(rows)), best], "se:(hindsight best)": se[np.arange(len(rows)), best] * rows["n"],
        "pick:(hindsight best)": [forecasts[i] for i in best]})
    forecasts.append("(hindsight best)")
    # MAE: per (series, end) pooled over channels and queries, then the mean over ends (as anchors)
    fold = rows.groupby(["series", "end"], sort=False)
    mae = (fold[[f"ae:{f}" for f in forecasts]].sum(min_count=1).div(fold["n"].sum(), axis=0)
           .groupby(level="series", sort=False).mean())
    mae.columns = forecasts
    mae = mae.T[order]
    if not reference.empty:
        ref = reference.pivot_table(index="row", columns="series", values="mae").reindex(columns=order)
        mae = pd.concat([mae, ref])
    nmse = rows[[f"se:{f}" for f in forecasts]].div(rows["n"], axis=0)
    nmse.columns = forecasts
    ratio = nmse.div(nmse["(shipped)"], axis=0)
    per_series = nmse.groupby(rows["series"], sort=False).mean()
    per_series = per_series.div(per_series["(shipped)"], axis=0).T[order]
    rules = ["(shipped)", *[f"[{r}]" for r in RULES], "[abs]", *[f"[top{k}]" for k in TOPS], "(hindsight best)"]
    summary = pd.DataFrame({"geo. mean ratio": [float(np.exp(np.log(ratio[r]).mean())) for r in rules],
                            "wins": [int((ratio[r] < 1 - 1e-9).sum()) for r in rules],
                            "losses": [int((ratio[r] > 1 + 1e-9).sum()) for r in rules]}, index=rules)
    picks = rows[["series", "end", "channel", "n_scored", "pick:(shipped)",
                  *[f"pick:[{r}]" for r in PICKS_SHOWN], "pick:(hindsight best)"]].copy()
    picks.columns = [c.replace("pick:", "") for c in picks.columns]
    picks["[all_new] ÷ shipped"] = ratio["[all_new]"].round(3).to_numpy()
    timing = rows.groupby(["series", "end"], sort=False)[["seconds_ship", "seconds_fit_new", "seconds_score"]].first()
    with pd.option_context("display.width", 250, "display.max_columns", 40, "display.max_rows", 400):
        return [
            "Held-out MAE (data units; per end pooled over channels and queries, then the mean over the ends, "
            "as the anchors tables). Rows: (shipped) the fit's pick; each candidate (#2: of the second "
            "period); [rule]: the shipped rule on other candidates (see the docstring); (hindsight best): "
            "per channel and end the candidate with the lowest held-out MSE (a bound); <anchors ...>: that "
            "row's MAE in the anchors results file (the full forecaster, not an offset).",
            mae.to_string(float_format=lambda v: f"{v:.4g}"), "",
            "Held-out normalised MSE per series (mean over ends and channels), ÷ the shipped pick's:",
            per_series.to_string(float_format=lambda v: f"{v:.3f}"), "",
            f"Rules over all {len(rows)} (series, end, channel) rows: geometric mean of held-out MSE ÷ the "
            "shipped pick's; wins/losses: rows where lower/higher.",
            summary.to_string(float_format=lambda v: f"{v:.3f}"), "",
            "Picks (the shipped rule, some of the others, hindsight; all of them in --rows):",
            picks.to_string(index=False), "",
            "Seconds per (series, end): the fit up to its offset choice (shipped); the new candidates' "
            "parameters; scoring every candidate on the scored origins:",
            timing.round(2).to_string(),
            f"Shipped rule re-applied here == the fit's own pick on {int(rows['ship_check'].sum())} of {len(rows)} rows.",
        ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME",
                        help=f"series: {', '.join(anchors.CASES)} (anchors); {', '.join(anchors.DEV_CASES)} (dev)")
    parser.add_argument("--set", choices=tuple(anchors.SETS), default="anchors",
                        help="the series studied without --only: the anchors or the development set (judge a "
                             "change on dev first, so that the anchors stay its test)")
    parser.add_argument("--ends", type=int, default=3)
    parser.add_argument("--origins", choices=("fit", "all"), default="fit",
                        help="the origins the choice is scored on: the fit's (its training and calibration ones) "
                             "or all of them, its test origins too (the latest before the end)")
    parser.add_argument("--reference", type=Path,
                        default=anchors.REPO / "benchmarks" / "results" / "anchors_bands_2026-12-03.txt",
                        help="an anchors results file whose other rows' MAE is shown beside")
    parser.add_argument("--out", type=Path, default=None, help="also write the tables here")
    parser.add_argument("--rows", type=Path, default=None, metavar="CSV",
                        help="also write the per (series, end, channel) rows: held-out sums of absolute (ae:) and "
                             "squared normalised (se:) errors, scored-origin MSE (val:), picks")
    parser.add_argument("--header", default="", help="lines put first in --out (date, commit, load, command)")
    args = parser.parse_args(argv)
    global ALL_ORIGINS
    ALL_ORIGINS = args.origins == "all"
    rows = []
    for case in anchors.load_cases(args.only, which=args.set):
        for k in range(1, args.ends + 1):
            part = study_fold(case, k)
            rows += part
            print(f"{case.name} end {k}: " + "; ".join(
                f"{r['channel']}: shipped {r['pick:(shipped)']}, all_new {r['pick:[all_new]']}" for r in part),
                flush=True)
    if args.rows is not None:
        pd.DataFrame(rows).to_csv(args.rows, index=False)
    text = "\n".join(tables(pd.DataFrame(rows), reference_mae(args.reference)))
    print(text)
    if args.out is not None:
        args.out.write_text((args.header + "\n\n" if args.header else "") + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
