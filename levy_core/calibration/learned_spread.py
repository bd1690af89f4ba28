"""A band sized by what a query knows, learned from the training file's own errors (issue 51).

On PhysioNet-sized panels σ̂ ranks the errors of new series little better than knowing the
channel (risk–coverage 0.90–0.93 of the per-channel constant, within-channel Spearman
0.22–0.24), and eight times the training stays do not change that. The error follows what σ̂
does not see: how long ago the query's own channel was observed, how far the forecast moves
from that value, the channel's own spread and step in the series. Two learners of the squared
error on those features and σ̂'s terms are fitted on the training and stopping series
(never the calibration or test series, so split conformal's guarantee holds as it does for
σ̂):

- a Poisson GLM, log-linear in eight standardised columns plus one intercept per channel;
- gradient-boosted trees (Poisson loss, 200 of them) on thirteen columns, the channel
  categorical, distilled into 30 trees fitted to the log of their prediction (what the band
  evaluates: a seventh of the cost, the same ranking).

The band's spread is their geometric mean ``(E_glm[e²] · E_trees[e²])^¼``, then calibrated per
channel and split-conformal exactly as σ̂ is. It replaces σ̂ only on a training file with at
least ``MIN_QUERIES`` training and stopping queries: on smaller files (PBC, Framingham) the
learners' coefficients swing and σ̂ ranks better. σ̂, its evidence and disagreement are
reported as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from levy_core.calibration.query_scale import CONTEXT_COLUMNS
from levy_core.calibration.tree_ensemble import TreeEnsemble

__all__ = ["MIN_QUERIES", "LearnedSpread", "query_columns"]

MIN_QUERIES = 20_000  # the gate (NOTES.md, 2026-12-07 22:31 and 23:53 UTC)
GLM_ALPHA = 1e-3
TREES = {"loss": "poisson", "max_iter": 200, "learning_rate": 0.05, "max_leaf_nodes": 15, "min_samples_leaf": 50,
         "random_state": 0}
# what is kept: 30 trees fitted to the log of the 200's prediction (a seventh of the cost to
# evaluate, the same ranking: NOTES.md, 2026-12-08 01:33 UTC)
DISTILLED = {"loss": "squared_error", "max_iter": 30, "learning_rate": 0.2, "max_leaf_nodes": 15,
             "min_samples_leaf": 50, "early_stopping": False, "random_state": 0}
N_COLUMNS = 13  # query_columns' width; the channel is the last
# the spread, in the model's normalised units (a channel's training range is 1), is kept inside
# this: a fit's lie within 1e-3 to 10; a saved model's numbers at their bounds then still give a band
SPREAD_RANGE = (1e-6, 1e6)


def query_columns(evidence_term: np.ndarray, disagreement_term: np.ndarray, sigma: np.ndarray,
                  log_evidence: np.ndarray, mean: np.ndarray, channel: np.ndarray,
                  context: dict[str, np.ndarray]) -> np.ndarray:
    """What a query knows, shape (n, 13), all inputs (n,) in the model's normalised units:
    σ̂'s two log terms, log σ̂, log Λ, the leads to the nearest observation of any channel and
    of its own (``context``: `query_scale.query_context`'s columns), whether its channel was
    seen, that nearest own value, the channel's spread and step in the series, how far the
    forecast moves from that value, a zero (the studies' delta-method column, 0 in the model's
    units) and the channel's index (categorical)."""
    gap_c = np.asarray(context["gap_channel"], np.float64)
    seen = np.isfinite(gap_c)
    near = np.nan_to_num(np.asarray(context["near_value"], np.float64))
    cols = [evidence_term, disagreement_term, np.log(np.asarray(sigma, np.float64) + 1e-12), log_evidence,
            np.log1p(np.maximum(np.asarray(context["gap_any"], np.float64), 0.0)),
            np.log1p(np.where(seen, np.maximum(gap_c, 0.0), 1e6)), seen.astype(float), near,
            np.nan_to_num(np.asarray(context["own_spread"], np.float64)),
            np.nan_to_num(np.asarray(context["own_step"], np.float64)),
            np.where(seen, np.abs(np.asarray(mean, np.float64) - near), 0.0), np.zeros(len(gap_c)), channel]
    return np.column_stack([np.asarray(c, np.float64) for c in cols])


def glm_design(x: np.ndarray) -> np.ndarray:
    """The GLM's eight columns from `query_columns`' (n, 13), finite and clipped to ±20."""
    cols = [x[:, 2], x[:, 4], np.minimum(x[:, 5], 12.0), x[:, 6], np.log(x[:, 8] + 1e-3), np.log(x[:, 9] + 1e-3),
            np.log(x[:, 10] + 1e-2), x[:, 11]]
    return np.clip(np.nan_to_num(np.column_stack(cols), nan=0.0, posinf=20.0, neginf=-20.0), -20.0, 20.0)


@dataclass(frozen=True)
class LearnedSpread:
    """The fitted spread.

    Attributes
    ----------
    n_channels : int
    centre, width : ndarray, shape (8,)
        The GLM's standardisation of `glm_design`'s columns.
    coef : ndarray, shape (8 + n_channels,)
        The GLM's coefficients: the eight columns, then one per channel.
    intercept : float
    trees : TreeEnsemble
    n_queries : int
        The training and stopping queries it was fitted on.
    """

    n_channels: int
    centre: np.ndarray
    width: np.ndarray
    coef: np.ndarray
    intercept: float
    trees: TreeEnsemble
    n_queries: int

    @staticmethod
    def within_reach(n_queries: int) -> bool:
        """Whether ``n_queries`` training and stopping queries reach the gate (`fit` still drops
        rows with a non-finite column): below it no pass over them is needed."""
        return n_queries >= MIN_QUERIES

    @classmethod
    def fit(cls, x: np.ndarray, squared_error: np.ndarray, n_channels: int) -> LearnedSpread | None:
        """Both learners on ``x`` (n, 13) from `query_columns` and the squared errors (n,);
        None below the gate (``MIN_QUERIES`` usable rows)."""
        from sklearn.ensemble import HistGradientBoostingRegressor
        from sklearn.linear_model import PoissonRegressor

        ok = np.all(np.isfinite(x[:, :-1]), axis=1) & np.isfinite(squared_error)
        if ok.sum() < MIN_QUERIES:
            return None
        x, e2 = x[ok], np.asarray(squared_error, np.float64)[ok]
        design = glm_design(x)
        centre, width = design.mean(0), design.std(0) + 1e-9
        glm = PoissonRegressor(alpha=GLM_ALPHA, max_iter=500).fit(_glm_inputs(x, centre, width, n_channels), e2)
        mask = np.zeros(N_COLUMNS, bool)
        mask[-1] = True
        teacher = HistGradientBoostingRegressor(categorical_features=mask, **TREES).fit(x, e2)
        trees = HistGradientBoostingRegressor(categorical_features=mask, **DISTILLED).fit(x, np.log(teacher.predict(x)))
        return cls(n_channels, centre, width, np.asarray(glm.coef_, np.float64), float(glm.intercept_),
                   TreeEnsemble.from_sklearn(trees), int(ok.sum()))

    @classmethod
    def from_frame(cls, frame: Any, channels: list[str]) -> LearnedSpread | None:
        """`fit` on a normalised prediction frame of observed queries (``observed_queries``: the
        pass's columns, ``y_norm`` and the context's), ``channels`` the model's in index order."""
        index = {str(c): i for i, c in enumerate(channels)}
        code = frame["channel"].astype(str).map(index).to_numpy(np.float64)
        x = query_columns(*(frame[c].to_numpy(np.float64) for c in ("evidence_term", "disagreement_term_norm",
                                                                     "sigma_norm", "log_evidence", "mean_norm")),
                          code, {k: frame[k].to_numpy(np.float64) for k in CONTEXT_COLUMNS})
        error = frame["y_norm"].to_numpy(np.float64) - frame["mean_norm"].to_numpy(np.float64)
        return cls.fit(x, error**2, len(channels))

    def expected_squared_error(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each learner's ``E[e²]`` at ``x`` (n, 13): (GLM, trees), each (n,)."""
        code = _channel_code(x, self.n_channels)
        log_e2 = ((glm_design(x) - self.centre) / self.width) @ self.coef[:8] + self.intercept \
            + np.where(code >= 0, self.coef[8:][np.maximum(code, 0)], 0.0)
        glm = np.exp(np.clip(log_e2, -700.0, 700.0))
        return glm, self.trees.predict(x)

    def spread(self, x: np.ndarray) -> np.ndarray:
        """The band's spread before calibration, ``(E_glm[e²] · E_trees[e²])^¼`` within
        ``SPREAD_RANGE``, shape (n,)."""
        glm, trees = self.expected_squared_error(x)
        return np.clip(glm ** 0.25 * trees ** 0.25, *SPREAD_RANGE)

    def to_dict(self) -> dict:
        return {"n_channels": self.n_channels, "centre": self.centre.tolist(), "width": self.width.tolist(),
                "coef": self.coef.tolist(), "intercept": self.intercept, "n_queries": self.n_queries,
                "trees": self.trees.to_dict()}

    @classmethod
    def from_dict(cls, data: Any) -> LearnedSpread:
        """The inverse of `to_dict`, checked as input (ValueError naming what is wrong)."""
        if not isinstance(data, dict):
            raise ValueError("a saved learned spread must be a mapping")
        try:
            n_channels = int(data["n_channels"])
            centre, width = (np.array(data[k], np.float64).reshape(-1) for k in ("centre", "width"))
            coef = np.array(data["coef"], np.float64).reshape(-1)
            intercept, n_queries = float(data["intercept"]), int(data["n_queries"])
            trees = TreeEnsemble.from_dict(data["trees"])
        except (KeyError, TypeError, OverflowError) as exc:
            raise ValueError(f"a saved learned spread lacks or garbles a field: {exc}") from exc
        if not 1 <= n_channels <= 100_000 or centre.shape != (8,) or width.shape != (8,) \
                or coef.shape != (8 + n_channels,):
            raise ValueError("a saved learned spread's coefficients do not match its channel count")
        if not all(np.all(np.isfinite(a)) for a in (centre, width, coef, [intercept])) or np.any(width <= 0):
            raise ValueError("a saved learned spread holds a non-finite coefficient or a scale ≤ 0")
        if trees.n_features != N_COLUMNS:
            raise ValueError(f"a saved learned spread's trees take {trees.n_features} columns, not {N_COLUMNS}")
        return cls(n_channels, centre, width, coef, intercept, trees, n_queries)


def _glm_inputs(x: np.ndarray, centre: np.ndarray, width: np.ndarray, n_channels: int) -> Any:
    """Standardised `glm_design` columns and one indicator per channel, (n, 8 + n_channels)
    sparse (CSR: a panel may have thousands of channels); a channel index outside the fit's has
    no indicator (the pooled intercept)."""
    from scipy import sparse

    code = _channel_code(x, n_channels)
    rows = np.flatnonzero(code >= 0)
    onehot = sparse.csr_matrix((np.ones(rows.size), (rows, code[rows])), shape=(x.shape[0], n_channels))
    return sparse.hstack([sparse.csr_matrix((glm_design(x) - centre) / width), onehot], format="csr")


def _channel_code(x: np.ndarray, n_channels: int) -> np.ndarray:
    """The channel column as indices, -1 where it is missing or outside ``0 … n_channels - 1``."""
    code = np.nan_to_num(x[:, -1], nan=-1.0, posinf=-1.0, neginf=-1.0)
    code = np.where((code >= 0) & (code < n_channels), code, -1.0)
    return code.astype(np.int64)
