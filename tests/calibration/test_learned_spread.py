"""The learned spread: the gate, the two learners against scikit-learn fitted the same way
(the reference), and its saved form as input."""

import json

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import PoissonRegressor

from levy_core.calibration import learned_spread as ls
from levy_core.calibration.learned_spread import LearnedSpread, glm_design, query_columns


def columns(n: int, n_channels: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    gap = rng.exponential(3.0, n)
    context = {"gap_any": rng.exponential(1.0, n), "gap_channel": np.where(rng.random(n) < 0.1, np.inf, gap),
               "near_value": rng.normal(size=n), "own_spread": rng.exponential(1.0, n),
               "own_step": np.where(rng.random(n) < 0.05, np.nan, rng.exponential(1.0, n))}
    sigma = rng.exponential(0.5, n)
    x = query_columns(rng.normal(size=n), rng.normal(size=n), sigma, rng.normal(size=n), rng.normal(size=n),
                      rng.integers(0, n_channels, n), context)
    scale = sigma * (1 + np.log1p(np.where(np.isfinite(context["gap_channel"]), gap, 10.0)))  # errors grow with the own gap
    return x, (rng.normal(size=n) * scale) ** 2


def test_below_the_gate_there_is_no_learned_spread(monkeypatch) -> None:
    x, e2 = columns(500)
    assert LearnedSpread.fit(x, e2, 4) is None
    monkeypatch.setattr(ls, "MIN_QUERIES", 400)
    assert LearnedSpread.fit(x, e2, 4) is not None


def test_the_learners_are_scikit_learns_fitted_the_same_way(monkeypatch) -> None:
    monkeypatch.setattr(ls, "MIN_QUERIES", 1000)
    x, e2 = columns(3000)
    fitted = LearnedSpread.fit(x, e2, 4)
    probe, _ = columns(500, seed=1)
    design = glm_design(x)
    centre, width = design.mean(0), design.std(0) + 1e-9

    def inputs(z):
        return np.hstack([(glm_design(z) - centre) / width, np.eye(4)[z[:, -1].astype(int)]])
    glm = PoissonRegressor(alpha=ls.GLM_ALPHA, max_iter=500).fit(inputs(x), e2)
    mask = np.zeros(13, bool)
    mask[-1] = True
    teacher = HistGradientBoostingRegressor(categorical_features=mask, **ls.TREES).fit(x, e2)
    trees = HistGradientBoostingRegressor(categorical_features=mask, **ls.DISTILLED).fit(x, np.log(teacher.predict(x)))
    assert len(fitted.trees.trees) == ls.DISTILLED["max_iter"]
    got_glm, got_trees = fitted.expected_squared_error(probe)
    np.testing.assert_allclose(got_glm, glm.predict(inputs(probe)), rtol=1e-9)
    np.testing.assert_allclose(got_trees, np.exp(trees.predict(probe)), rtol=1e-12)
    np.testing.assert_allclose(fitted.spread(probe), (glm.predict(inputs(probe)) * np.exp(trees.predict(probe))) ** 0.25,
                               rtol=1e-9)
    # the 30 kept trees follow the 200 they were distilled from
    assert np.corrcoef(np.log(got_trees), np.log(teacher.predict(probe)))[0, 1] > 0.95


def test_the_spread_follows_the_own_channel_gap(monkeypatch) -> None:
    monkeypatch.setattr(ls, "MIN_QUERIES", 1000)
    x, e2 = columns(4000)
    fitted = LearnedSpread.fit(x, e2, 4)
    near, far = x.copy(), x.copy()
    near[:, 5], far[:, 5] = np.log1p(0.1), np.log1p(20.0)
    assert np.median(fitted.spread(far) / fitted.spread(near)) > 1.2


def test_the_saved_form_round_trips_and_refuses_damage(monkeypatch) -> None:
    monkeypatch.setattr(ls, "MIN_QUERIES", 1000)
    x, e2 = columns(2000)
    fitted = LearnedSpread.fit(x, e2, 4)
    data = json.loads(json.dumps(fitted.to_dict()))
    np.testing.assert_allclose(LearnedSpread.from_dict(data).spread(x), fitted.spread(x), rtol=1e-12)
    for damage, message in ((lambda d: d.update(coef=d["coef"][:-1]), "channel count"),
                            (lambda d: d.update(width=[0.0] * 8), "scale"),
                            (lambda d: d.pop("trees"), "lacks"),
                            (lambda d: d["trees"].update(n_features=12, category_slot=[-1] * 12,
                                                         column_order=list(range(12))), "saved ensemble|columns")):
        broken = json.loads(json.dumps(data))
        damage(broken)
        with pytest.raises(ValueError, match=message):
            LearnedSpread.from_dict(broken)
