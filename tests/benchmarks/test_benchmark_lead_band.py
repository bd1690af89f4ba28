"""The lead_band study's replay (issue 51): its thirds and its walk against the library's."""

import numpy as np
import pandas as pd

from benchmarks.studies import lead_band
from levy_core.calibration.adaptive import AdaptiveConformal


def test_a_lead_falls_in_the_third_of_the_horizon_that_holds_it() -> None:
    shares = np.array([1e-6, 1 / 3, 0.34, 2 / 3, 0.7, 1.0])
    assert lead_band.third(shares).tolist() == [0, 0, 1, 1, 2, 2]


def _frame(rng: np.random.Generator, n: int, origins: int, horizon: float) -> pd.DataFrame:
    return pd.DataFrame({"y_norm": rng.normal(size=n), "mean_norm": 0.0, "spread_norm": 1.0,
                         "sigma": rng.uniform(0.5, 2.0, n), "channel": "x",
                         "time": rng.uniform(0, horizon, n), "series_id": "s",
                         "origin": np.repeat(np.arange(origins, dtype=float), n // origins)})


def test_the_replay_walks_as_the_library_and_the_rules_read_their_own_pools() -> None:
    rng = np.random.default_rng(0)
    cal, test = _frame(rng, 120, 12, 10.0), _frame(rng, 150, 15, 10.0)
    test["origin"] += 100.0
    row = {"frames": {"cal": cal, "test": test}, "floor": 1e-3, "gamma": 0.05, "horizon": 10.0,
           "y": np.zeros(6), "lead_share": np.linspace(0.1, 1.0, 6)}
    cal_scores, test_scores = lead_band.scores(cal, 1e-3), lead_band.scores(test, 1e-3)
    library = AdaptiveConformal(0.9, 0.05).conformalize(cal_scores, sigma_floor=1e-3)
    library.run(test["y_norm"], test["mean_norm"], test["sigma"], order=test["origin"])
    out = lead_band.rules(row)
    assert np.allclose(out["shipped"], library.quantile())
    alone = AdaptiveConformal(0.9).conformalize(test_scores).quantile(library.alpha_)
    assert np.allclose(out["walk scores only"], alone)
    # one walk per third: the end's first two queries (leads 0.1 and 0.28 of the horizon) take the first third's
    first = lead_band.third(cal["time"] / 10.0) == 0
    walked = AdaptiveConformal(0.9, 0.05).conformalize(cal_scores[first], sigma_floor=1e-3)
    t_first = lead_band.third(test["time"] / 10.0) == 0
    walked.run(test["y_norm"][t_first], test["mean_norm"][t_first], test["sigma"][t_first],
               order=test["origin"][t_first])
    assert np.allclose(out["per third"][:2], lead_band.end_quantile(walked))
