"""The trees' saved form against scikit-learn's own predict (the reference), and as input."""

import json

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingRegressor

from levy_core.calibration.tree_ensemble import TreeEnsemble


def fitted(categorical: bool, seed: int = 0) -> tuple[HistGradientBoostingRegressor, np.random.Generator]:
    rng = np.random.default_rng(seed)
    n = 4000
    x = rng.normal(size=(n, 5))
    x[:, 2] = rng.integers(0, 12, n) * 3.0  # a channel code (not 0..k-1: the encoder's index is what splits)
    x[rng.random(n) < 0.05, 1] = np.nan
    y = rng.poisson(np.exp(0.4 * x[:, 0] + 0.2 * (x[:, 2] % 9) / 3 + 0.3 * np.nan_to_num(x[:, 1])))
    mask = np.zeros(5, bool)
    mask[2] = categorical
    model = HistGradientBoostingRegressor(loss="poisson", max_iter=40, max_leaf_nodes=15, min_samples_leaf=20,
                                          categorical_features=mask if categorical else None, random_state=seed)
    return model.fit(x, y), rng


def probe(rng: np.random.Generator, n: int = 3000) -> np.ndarray:
    x = rng.normal(size=(n, 5))
    x[:, 2] = rng.integers(-2, 15, n) * 3.0  # unseen codes and negative ones among them
    x[rng.random(n) < 0.1, 1] = np.nan
    x[rng.random(n) < 0.05, 2] = np.nan
    return x


@pytest.mark.parametrize("categorical", [True, False])
def test_the_arrays_predict_what_scikit_learn_predicts(categorical: bool) -> None:
    model, rng = fitted(categorical)
    x = probe(rng)
    ensemble = TreeEnsemble.from_sklearn(model)
    np.testing.assert_allclose(ensemble.predict(x), model.predict(x), rtol=1e-12)
    # the readable NumPy walk beside scikit-learn's compiled one
    np.testing.assert_allclose(ensemble.raw(x, compiled=False), ensemble.raw(x), rtol=1e-12)
    again = TreeEnsemble.from_dict(json.loads(json.dumps(ensemble.to_dict())))
    np.testing.assert_allclose(again.predict(x), model.predict(x), rtol=1e-12)


def test_a_squared_error_model_is_carried_as_the_exp_of_its_prediction() -> None:
    """The learned spread's distilled trees: fitted to a log, read back as its exp."""
    x = np.random.default_rng(3).normal(size=(400, 3))
    model = HistGradientBoostingRegressor(max_iter=12, early_stopping=False).fit(x, np.sin(x[:, 0]) + x[:, 1] ** 2)
    ensemble = TreeEnsemble.from_sklearn(model)
    np.testing.assert_allclose(ensemble.predict(x), np.exp(model.predict(x)), rtol=1e-12)
    np.testing.assert_allclose(ensemble.raw(x, compiled=False), model.predict(x), rtol=1e-12, atol=1e-12)


def test_other_losses_are_refused() -> None:
    model = HistGradientBoostingRegressor(loss="absolute_error", max_iter=3).fit(np.arange(40.0).reshape(-1, 1),
                                                                                  np.arange(40.0))
    with pytest.raises(ValueError, match="Poisson and squared-error"):
        TreeEnsemble.from_sklearn(model)


def test_inputs_of_the_wrong_width_are_refused() -> None:
    ensemble = TreeEnsemble.from_sklearn(fitted(True)[0])
    with pytest.raises(ValueError, match=r"shape \(n, 5\)"):
        ensemble.predict(np.zeros((3, 4)))


def saved() -> dict:
    return TreeEnsemble.from_sklearn(fitted(True)[0]).to_dict()


def first_inner(tree: dict) -> int:
    return tree["is_leaf"].index(0)


@pytest.mark.parametrize(("damage", "message"), [
    (lambda d: d.pop("trees"), "lacks or garbles"),
    (lambda d: d.update(baseline=float("nan")), "baseline"),
    (lambda d: d.update(column_order=[0, 0, 1, 2, 3]), "permutation"),
    (lambda d: d["trees"][0].update(value=[float("inf")] * len(d["trees"][0]["value"])), "non-finite"),
    (lambda d: d["trees"][0]["left"].__setitem__(first_inner(d["trees"][0]), 0), "out of order"),
    (lambda d: d["trees"][0]["feature_idx"].__setitem__(first_inner(d["trees"][0]), 7), "feature it does not have"),
    (lambda d: d["trees"][0]["right"].pop(), "different lengths"),
    (lambda d: d.update(trees=d["trees"] * 300), "at most"),
])
def test_a_damaged_saved_form_is_refused_by_name(damage, message) -> None:
    data = saved()
    damage(data)
    with pytest.raises(ValueError, match=message):
        TreeEnsemble.from_dict(data)
