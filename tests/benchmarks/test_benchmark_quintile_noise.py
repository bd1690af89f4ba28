"""The lead-tercile threshold of the quintile study (issue 51): a quantile regression on group
indicators covers its level within each group of the calibration queries, up to the
interpolated points (at most one per coefficient)."""

import numpy as np
import pandas as pd

from benchmarks.studies.quintile_noise import LeadTercileThreshold

LEVEL = 0.9


def calibration(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    channel = rng.choice(["a", "b", "c"], size=n)
    lead = rng.exponential(5.0, size=n)
    scale = np.where(lead < 2.0, 1.6, 1.0) * np.where(channel == "b", 2.0, 1.0)  # short leads and b are wider
    return pd.DataFrame({"channel": channel, "gap_any": lead, "y_norm": rng.normal(0, scale), "mean_norm": 0.0,
                         "spread_norm": 1.0})


def test_each_channel_and_lead_tercile_covers_its_level() -> None:
    cal = calibration(3000)
    fit = LeadTercileThreshold.fit(cal, LEVEL)
    covered = np.abs(cal["y_norm"].to_numpy()) <= fit.threshold(cal)
    n_coef = len(fit.coef)
    lead = cal["gap_any"].to_numpy()
    groups = [cal["channel"].to_numpy() == c for c in "abc"]
    groups += [lead <= fit.edges[0], lead > fit.edges[1]]
    for g in groups:
        share = covered[g].mean()
        assert LEVEL - n_coef / g.sum() - 1e-9 <= share <= LEVEL + n_coef / g.sum() + 1e-9


def test_the_short_leads_get_the_wider_threshold() -> None:
    cal = calibration(3000, seed=1)
    fit = LeadTercileThreshold.fit(cal, LEVEL)
    probe = pd.DataFrame({"channel": ["a", "a", "a"], "gap_any": [fit.edges[0] / 2, np.mean(fit.edges),
                                                                   2 * fit.edges[1]]})
    short, middle, far = fit.threshold(probe)
    assert short > middle and short > far


def test_a_rare_channel_shares_one_indicator() -> None:
    cal = calibration(600)
    cal.loc[cal.index[:20], "channel"] = "rare"
    fit = LeadTercileThreshold.fit(cal, LEVEL)
    assert "rare" not in fit.channels and len(fit.coef) == len(fit.channels) + 3
