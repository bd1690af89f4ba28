"""A band sized for each query: the spread ``s(q)`` recalibrated from the pass's own terms
(opt-in: ``levy_core.pipeline.fit(..., band_map=True)``).

``σ̂(q) = sqrt(tr Σ_V(q) · φ(Λ_q))`` is the exact RMS deviation of the sampled operator: its
log splits into an evidence term ``E = ½ log φ(Λ_q)`` and a disagreement term
``D = ½ log tr Σ_V(q)``. How far a prediction actually misses need not scale with it one for
one. An EMOS-style map (Gneiting et al. 2005), fitted on held-out series, resizes it query by
query:

    log s(q) = a_c + β_E E + β_D D + β_g G + β_k K + β_n N + β_l L + β_σ S + β_Δ Δ

with ``a_c`` one intercept per channel (shrunk towards the pooled one); ``G`` and ``K`` the
distance from the query to the nearest context observation of any channel and of its own
channel (``log(1 + d/u)``, ``u`` the median distance on the fit set); ``N`` 1 where the
channel was never observed in the context; ``L`` the nearest own value; ``S`` and ``Δ`` the
log spread and log mean step of the channel's values in the series ([`query_context`][levy_core.calibration.query_scale.query_context]).
With ``a = 0``, ``β_E = β_D = 1`` and the rest 0 the map is ``σ̂`` itself. The coefficients
are fitted by minimum CRPS of the Gaussian ``N(ŷ, s²)``, each channel and each series weighing
alike ([`query_weights`][levy_core.calibration.query_scale.query_weights]), with a ridge towards that point whose strength is chosen on
held-out series (``inf``, σ̂'s own terms, wins unless a map does better on series it did not
see).

Nothing of the operator changes: σ̂, its evidence and disagreement are reported as before,
and the map is a fixed function of them and of the query's context, chosen before the
conformal calibration series are seen; the per-channel scale and split conformal then
calibrate ``s(q)`` on those series exactly as they calibrated σ̂, so split conformal's
guarantee holds unchanged. On five unseen panels it lowered the risk–coverage ratio on one and
raised the CRPS on three (docs/benchmarks/band-per-query.md): measured, not the default.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

__all__ = ["CONTEXT_COLUMNS", "FEATURES", "MIN_QUERIES", "QueryScale", "fit_query_scale", "query_context", "query_features"]

#: The map's inputs, in the order of its coefficients.
FEATURES: tuple[str, ...] = ("evidence", "disagreement", "gap_any", "gap_channel", "never_observed", "level",
                              "own_spread", "own_step")
#: The coefficients' prior: σ̂ itself (``β_E = β_D = 1``, the rest 0).
PRIOR: tuple[float, ...] = (1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
#: The context summaries :func:`query_context` returns, the map's raw inputs beside σ̂'s two terms.
CONTEXT_COLUMNS: tuple[str, ...] = ("gap_any", "gap_channel", "near_value", "own_spread", "own_step")
SPREAD_FLOOR = 0.02  # of the channel's normalised range: a series whose channel never moved is not infinitely sure
#: Fewer held-out queries than this: no map (σ̂ is the spread).
MIN_QUERIES = 200
# the ridge on β − PRIOR, in units of the fit's mean CRPS, divided by the independent units (series,
# or queries without series): 0.5 / 60 stays shrinks a unit-variance feature's slope by about a tenth
RIDGE = 0.5
INTERCEPT_SHRINKAGE = 30.0  # a channel's intercept is pulled towards the pooled one with this many pseudo-queries
COEFFICIENT_RANGE = 5.0  # |β| at most this: a map is a correction, not a new model
CV_FOLDS = 5  # folds of whole series that choose the ridge's strength
RIDGE_STRENGTHS = (math.inf, 16.0, 4.0, 1.0, 0.25)  # inf: σ̂'s own terms, channel intercepts only
_SQRT_PI = math.sqrt(math.pi)


def query_context(qry_time: np.ndarray, qry_channel: np.ndarray, qry_mask: np.ndarray, ctx_time: np.ndarray,
                  ctx_channel: np.ndarray, ctx_value: np.ndarray, ctx_mask: np.ndarray) -> dict[str, np.ndarray]:
    """What the context says about each query's place, beside the pass: its distance to the
    data and what its own channel has done in this series.

    Parameters
    ----------
    qry_time, qry_channel, qry_mask : ndarray, shape (B, M)
    ctx_time, ctx_channel, ctx_value, ctx_mask : ndarray, shape (B, N)
        Padding has mask 0 and is ignored; values in the model's normalised units.

    Returns
    -------
    dict of ndarray, shape (B, M) each, named as `CONTEXT_COLUMNS`
        ``gap_any`` / ``gap_channel``: hours to the nearest context observation of any channel /
        of the query's channel (``inf`` where there is none); ``near_value``: the value of that
        nearest own-channel observation; ``own_spread``: the standard deviation of the channel's
        context values in the series; ``own_step``: the mean absolute change between its
        successive values (NaN where the channel has no observation, resp. fewer than two).
    """
    qt, ct, cv = (np.asarray(a, np.float64) for a in (qry_time, ctx_time, ctx_value))
    qc, cc = np.asarray(qry_channel, np.int64), np.asarray(ctx_channel, np.int64)
    B, M = qt.shape
    out = {name: np.full(qt.shape, np.inf if name.startswith("gap") else np.nan) for name in CONTEXT_COLUMNS}
    real, asked = np.asarray(ctx_mask) > 0, np.asarray(qry_mask) > 0
    if not real.any() or not asked.any():
        return out
    # one sorted key for the whole batch, series by series (and channel by channel): every
    # search stays inside its own group, memory O(B·(M + N)), no Python loop over series
    n_channels = int(max(cc[real].max(), qc[asked].max())) + 1
    lo, hi = min(ct[real].min(), qt[asked].min()), max(ct[real].max(), qt[asked].max())
    width = (hi - lo) * 2.0 + 1.0
    b_ctx, b_qry = np.nonzero(real), np.nonzero(asked)
    t_ctx, t_qry = ct[real] - lo, qt[asked] - lo
    for name, group_ctx, group_qry in (("any", b_ctx[0], b_qry[0]),
                                       ("own", b_ctx[0] * n_channels + cc[real], b_qry[0] * n_channels + qc[asked])):
        key = group_ctx * width + t_ctx
        order = np.argsort(key, kind="stable")
        key, group, values = key[order], group_ctx[order], cv[real][order]
        gap, nearest = _nearest_in_group(key, group, group_qry * width + t_qry, group_qry)
        if name == "any":
            out["gap_any"][asked] = gap
            continue
        out["gap_channel"][asked] = gap
        found = np.isfinite(gap)
        out["near_value"][asked] = np.where(found, values[np.where(found, nearest, 0)], np.nan)
        # the channel's history in the series: the spread of its values, the mean size of its steps
        count = np.bincount(group, minlength=B * n_channels).astype(np.float64)
        total = np.bincount(group, weights=values, minlength=B * n_channels)
        square = np.bincount(group, weights=values**2, minlength=B * n_channels)
        mean = total / np.maximum(count, 1.0)
        spread = np.sqrt(np.maximum(square / np.maximum(count, 1.0) - mean**2, 0.0))
        same = group[1:] == group[:-1]
        steps = np.bincount(group[1:][same], weights=np.abs(np.diff(values))[same], minlength=B * n_channels)
        step = np.where(count >= 2, steps / np.maximum(count - 1, 1.0), np.nan)
        out["own_spread"][asked] = np.where(count[group_qry] > 0, spread[group_qry], np.nan)
        out["own_step"][asked] = step[group_qry]
    return out


def _nearest_in_group(keys: np.ndarray, groups: np.ndarray, at: np.ndarray, at_groups: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``at`` (m,), the distance to the nearest of the sorted ``keys`` (n,) of its
    own group and that key's index (the earlier one on a tie); ``inf`` (index 0) where its group
    has none, (m,) each."""
    right = np.clip(np.searchsorted(keys, at, side="left"), 0, keys.size - 1)
    left = np.maximum(right - 1, 0)
    d_left = np.where(groups[left] == at_groups, np.abs(at - keys[left]), np.inf)
    d_right = np.where(groups[right] == at_groups, np.abs(keys[right] - at), np.inf)
    take_left = d_left <= d_right
    gap = np.where(take_left, d_left, d_right)
    return gap, np.where(np.isfinite(gap), np.where(take_left, left, right), 0)


def query_features(evidence: np.ndarray, disagreement: np.ndarray, context: dict[str, np.ndarray],
                   unit: float) -> np.ndarray:
    """The map's design matrix, shape (n, len(FEATURES)): the evidence and disagreement terms
    of ``log σ̂`` (n,) each, the context summaries of [`query_context`][levy_core.calibration.query_scale.query_context] (1-D, n each) and the
    distance unit ``u`` (hours, > 0). A channel never observed in the series is flagged and
    takes the series' nearest distance, level 0 and the floor's spread."""
    gap_any, gap_channel = (np.asarray(context[k], np.float64) for k in ("gap_any", "gap_channel"))
    never = ~np.isfinite(gap_channel)
    any_gap = np.where(np.isfinite(gap_any), gap_any, 0.0)
    own_gap = np.where(never, any_gap, gap_channel)
    level = np.nan_to_num(np.asarray(context["near_value"], np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    spread, step = (np.nan_to_num(np.asarray(context[k], np.float64), nan=0.0, posinf=0.0, neginf=0.0)
                    for k in ("own_spread", "own_step"))
    return np.column_stack([np.asarray(evidence, np.float64), np.asarray(disagreement, np.float64),
                            np.log1p(np.maximum(any_gap, 0.0) / unit), np.log1p(np.maximum(own_gap, 0.0) / unit),
                            never.astype(np.float64), np.clip(level, -10.0, 10.0),
                            np.log(np.abs(spread) + SPREAD_FLOOR), np.log(np.abs(step) + SPREAD_FLOOR)])


@dataclass(frozen=True)
class QueryScale:
    """``log s(q) = a_c + Σ_j β_j x_j(q)`` over `FEATURES` (module docstring).

    Attributes
    ----------
    intercepts : tuple of float
        ``a_c``, one per channel of the model, in the model's channel order.
    coefficients : tuple of float
        ``β`` in the order of `FEATURES`.
    unit : float
        The distances' unit ``u``, hours.
    n_queries : int
        Held-out queries the map was fitted on.
    ridge_strength : float
        The ridge's strength chosen on held-out series (``inf``: the coefficients are the
        prior's, σ̂'s own terms with a factor per channel).
    """

    intercepts: tuple[float, ...]
    coefficients: tuple[float, ...]
    unit: float
    n_queries: int = 0
    ridge_strength: float = 1.0  # chosen on held-out series (inf: the coefficients are σ̂'s own)

    def __post_init__(self) -> None:
        if len(self.coefficients) != len(FEATURES):
            raise ValueError(f"query scale: {len(FEATURES)} coefficients expected ({', '.join(FEATURES)}), "
                             f"got {len(self.coefficients)}")
        if not self.intercepts or len(self.intercepts) > 100_000:
            raise ValueError("query scale: one intercept per channel expected")
        numbers = (*self.intercepts, *self.coefficients)
        if not all(isinstance(x, (int, float)) and math.isfinite(x) and abs(x) <= 50 for x in numbers):
            raise ValueError("query scale: intercepts and coefficients must be finite numbers in [-50, 50]")
        if not (isinstance(self.unit, (int, float)) and math.isfinite(self.unit) and 0 < self.unit <= 1e12):
            raise ValueError(f"query scale: the distance unit must be a positive number of hours, got {self.unit!r}")

    def log_spread(self, channel: np.ndarray, features: np.ndarray) -> np.ndarray:
        """``log s(q)``, shape (n,): ``channel`` (n,) the model's channel indices, ``features``
        (n, len(FEATURES)) from [`query_features`][levy_core.calibration.query_scale.query_features]."""
        a = np.asarray(self.intercepts, np.float64)[np.asarray(channel, np.int64)]
        return a + np.asarray(features, np.float64) @ np.asarray(self.coefficients, np.float64)

    def spread(self, channel: np.ndarray, evidence: np.ndarray, disagreement: np.ndarray,
               context: dict[str, np.ndarray]) -> np.ndarray:
        """``s(q)`` at queries given as arrays of one shape (any: ``channel``, the two terms and
        each of `CONTEXT_COLUMNS` in ``context``), that shape; finite and > 0 wherever the
        evidence and disagreement terms are finite."""
        shape = np.shape(evidence)
        x = query_features(np.ravel(evidence), np.ravel(disagreement),
                           {k: np.ravel(context[k]) for k in CONTEXT_COLUMNS}, self.unit)
        return np.exp(np.clip(self.log_spread(np.ravel(channel), x), -700.0, 700.0)).reshape(shape)

    def terms(self, channel: np.ndarray, features: np.ndarray) -> dict[str, np.ndarray]:
        """Each part of ``log s(q)``, (n,) each: ``channel`` (``a_c``), ``evidence``,
        ``disagreement``, ``distance`` (the two distances and the never-observed flag) and
        ``own history`` (the channel's level, spread and steps in the series): why one query's
        band is as wide as it is."""
        x = np.asarray(features, np.float64)
        beta = np.asarray(self.coefficients)
        return {"channel": np.asarray(self.intercepts, np.float64)[np.asarray(channel, np.int64)],
                "evidence": beta[0] * x[:, 0], "disagreement": beta[1] * x[:, 1], "distance": x[:, 2:5] @ beta[2:5],
                "own history": x[:, 5:] @ beta[5:]}

    def to_dict(self) -> dict:
        return {"intercepts": list(self.intercepts), "coefficients": dict(zip(FEATURES, self.coefficients, strict=True)),
                "unit_hours": self.unit, "n_queries": self.n_queries,
                "ridge_strength": None if math.isinf(self.ridge_strength) else self.ridge_strength}

    @classmethod
    def from_dict(cls, data: dict) -> QueryScale:
        keys = {"intercepts", "coefficients", "unit_hours", "n_queries", "ridge_strength"}
        if not isinstance(data, dict) or set(data) != keys:
            raise ValueError(f"query scale: expected the keys {', '.join(sorted(keys))}")
        strength = data["ridge_strength"]
        if strength is not None and not (isinstance(strength, (int, float)) and 0 < strength < math.inf):
            raise ValueError("query scale: ridge_strength must be a positive number or null (σ̂'s own terms)")
        coefficients = data["coefficients"]
        if not isinstance(coefficients, dict) or set(coefficients) != set(FEATURES):
            raise ValueError(f"query scale: coefficients must name exactly {', '.join(FEATURES)}")
        intercepts = data["intercepts"]
        if not isinstance(intercepts, list):
            raise ValueError("query scale: intercepts must be a list, one per channel")
        n = data["n_queries"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError("query scale: n_queries must be a non-negative integer")
        return cls(tuple(float(x) for x in intercepts), tuple(float(coefficients[f]) for f in FEATURES),
                   float(data["unit_hours"]), n, math.inf if strength is None else float(strength))


def _crps_and_gradient(log_s: np.ndarray, error: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Gaussian CRPS of ``N(0, s²)`` at ``error`` and its derivative in ``log s``, (n,) each
    (``∂CRPS/∂s = 2φ(z) − 1/√π``)."""
    s = np.exp(log_s)
    z = error / s
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    crps = s * (z * special.erf(z / math.sqrt(2)) + 2 * pdf - 1 / _SQRT_PI)
    return crps, s * (2 * pdf - 1 / _SQRT_PI)


def fit_query_scale(channel: np.ndarray, y: np.ndarray, mean: np.ndarray, evidence: np.ndarray,
                    disagreement: np.ndarray, context: dict[str, np.ndarray], *,
                    n_channels: int, series: Sequence[object] | np.ndarray | None = None) -> QueryScale | None:
    """The map of minimum CRPS on held-out queries, or None with fewer than
    `MIN_QUERIES` usable ones.

    Parameters
    ----------
    channel : ndarray, shape (n,)
        The model's channel index of each query, in ``[0, n_channels)``.
    y, mean : ndarray, shape (n,)
        Truth and prediction (normalised units).
    evidence, disagreement : ndarray, shape (n,)
        The two terms of ``log σ̂`` at each query.
    context : dict of ndarray, shape (n,) each
        [`query_context`][levy_core.calibration.query_scale.query_context]'s summaries, named as `CONTEXT_COLUMNS`.
    n_channels : int
    series : array-like, shape (n,), optional
        Each query's series: every series weighs alike in the fit (one long stay does not
        decide the map).
    """
    channel = np.asarray(channel, np.int64)
    y, mean, evidence, disagreement = (np.asarray(a, np.float64) for a in (y, mean, evidence, disagreement))
    context = {k: np.asarray(context[k], np.float64) for k in CONTEXT_COLUMNS}
    gap_any = context["gap_any"]
    ok = np.isfinite(y) & np.isfinite(mean) & np.isfinite(evidence) & np.isfinite(disagreement) & np.isfinite(gap_any)
    if int(ok.sum()) < MIN_QUERIES:
        return None
    finite_gaps = gap_any[ok & (gap_any > 0)]
    unit = float(np.median(finite_gaps)) if finite_gaps.size else 1.0
    x = query_features(evidence[ok], disagreement[ok], {k: v[ok] for k, v in context.items()}, unit)
    error, c = (y - mean)[ok], channel[ok]
    if not np.any(error != 0):
        return None
    if series is None:
        code = np.arange(error.size)
    else:
        _, code = np.unique(np.asarray(series, dtype=object)[ok].astype(str), return_inverse=True)
    units = int(code.max()) + 1
    strength = _choose_ridge(x, error, c, code, n_channels) if units >= CV_FOLDS * 2 else 1.0
    theta = _solve(x, error, c, code, n_channels, strength, np.ones(error.size, bool))
    present = np.bincount(c, minlength=n_channels) > 0
    intercepts = np.where(present, theta[1:1 + n_channels], theta[0])
    return QueryScale(tuple(float(v) for v in intercepts), tuple(float(v) for v in theta[1 + n_channels:]),
                      unit, int(error.size), float(strength))


def query_weights(error: np.ndarray, c: np.ndarray, code: np.ndarray, n_channels: int) -> np.ndarray:
    """Each query's weight in the fit, (n,), summing to 1: every series alike within its channel,
    and every channel alike in its own error units (its weights sum to ``1/C`` and its CRPS is
    divided by its root-mean-square error) -- the way the project scores a panel, channel by
    channel, so that the many queries of a frequent channel do not decide the map for the rare
    ones."""
    per_series = np.bincount(code)[code].astype(np.float64)
    weight = 1.0 / per_series
    totals = np.bincount(c, weights=weight, minlength=n_channels)
    rms = np.sqrt(np.bincount(c, weights=weight * error**2, minlength=n_channels) / np.maximum(totals, 1e-300))
    present = totals > 0
    weight = weight / totals[c] / np.where(rms[c] > 0, rms[c], 1.0) / int(present.sum())
    return weight / weight.sum()


def _solve(x: np.ndarray, error: np.ndarray, c: np.ndarray, code: np.ndarray, n_channels: int, strength: float,
           rows: np.ndarray) -> np.ndarray:
    """Minimum penalised CRPS on the ``rows`` (bool, (n,)): ``[pooled, a_0..a_{C-1}, β]``.
    ``strength`` multiplies the ridge on ``β − PRIOR`` (``inf``: β is the prior)."""
    x, error, c, code = x[rows], error[rows], c[rows], code[rows]
    _, code, count = np.unique(code, return_inverse=True, return_counts=True)
    weight = query_weights(error, c, code, n_channels)
    n, units = error.size, count.size
    prior = np.asarray(PRIOR)
    present = np.bincount(c, minlength=n_channels) > 0
    ridge = RIDGE * strength / max(units, 1)
    shrink = INTERCEPT_SHRINKAGE / max(n, 1)
    fixed = not math.isfinite(ridge)
    # start: σ̂ scaled to its RMS on the fit set (the prior's own best intercept)
    start_log = float(0.5 * np.log(max(float(np.mean(error**2)), 1e-300)) - np.mean(x[:, 0] + x[:, 1]))
    theta0 = np.concatenate([[start_log], np.full(n_channels, start_log), prior])
    # the penalties in units of the start's mean CRPS: the same pull whatever the data's scale
    reference = float(weight @ _crps_and_gradient(start_log + x[:, 0] + x[:, 1], error)[0]) or 1.0

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        pooled, intercepts, beta = theta[0], theta[1:1 + n_channels], theta[1 + n_channels:]
        crps, d_log_s = _crps_and_gradient(intercepts[c] + x @ beta, error)
        g = weight * d_log_s
        grad = np.zeros_like(theta)
        grad[1:1 + n_channels] = np.bincount(c, weights=g, minlength=n_channels)
        grad[1 + n_channels:] = 0.0 if fixed else x.T @ g
        gap, spread = beta - prior, present * (intercepts - pooled)
        value = float(weight @ crps) + reference * shrink * float(spread @ spread)
        if not fixed:
            value += reference * ridge * float(gap @ gap)
            grad[1 + n_channels:] += 2 * reference * ridge * gap
        grad[1:1 + n_channels] += 2 * reference * shrink * spread
        grad[0] -= 2 * reference * shrink * float(spread.sum())
        return value, grad

    bounds = ([(-50.0, 50.0)] * (1 + n_channels)
              + [(p, p) if fixed else (p - COEFFICIENT_RANGE, p + COEFFICIENT_RANGE) for p in prior])
    result = optimize.minimize(objective, theta0, jac=True, method="L-BFGS-B", bounds=bounds,
                               options={"maxiter": 500})
    return result.x if np.all(np.isfinite(result.x)) else theta0


def _choose_ridge(x: np.ndarray, error: np.ndarray, c: np.ndarray, code: np.ndarray, n_channels: int) -> float:
    """The ridge's strength of least CRPS on held-out series: ``CV_FOLDS`` folds of whole
    series, each strength of `RIDGE_STRENGTHS` fitted on the others and scored on it
    (each series weighing alike). ``inf`` (σ̂'s own terms, channel intercepts only) wins unless
    a map does better on series it did not see."""
    fold = np.random.default_rng(0).permutation(int(code.max()) + 1)[code] % CV_FOLDS
    weight = query_weights(error, c, code, n_channels)
    scores = []
    for strength in RIDGE_STRENGTHS:
        total = 0.0
        for k in range(CV_FOLDS):
            held = fold == k
            theta = _solve(x, error, c, code, n_channels, strength, ~held)
            log_s = theta[1:1 + n_channels][c[held]] + x[held] @ theta[1 + n_channels:]
            total += float(weight[held] @ _crps_and_gradient(log_s, error[held])[0])
        scores.append(total)
    return float(RIDGE_STRENGTHS[int(np.argmin(scores))])
