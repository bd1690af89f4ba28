"""Ranking in padded batches (sorted by context length) scores each series as it scores alone."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest
import torch

from levy_core.data import DataError
from levy_core.pipeline import ranking


def test_batched_scores_equal_each_series_scored_alone(fitted, synthetic_obs) -> None:
    obs = synthetic_obs  # 40 series of many context lengths
    alone, _ = ranking.score_series(fitted, obs, batch_series=1)  # no padding: the reference
    batched, _ = ranking.score_series(fitted, obs, batch_series=8)
    alone, batched = (f.set_index("series_id").sort_index() for f in (alone, batched))
    assert len(batched) == obs.n_series and batched.index.equals(alone.index)
    assert (batched["n_queries"] == alone["n_queries"]).all()
    for col in ("trust_score", "mean_sigma", "mean_log_evidence", "mean_n_eff", "mean_disagreement"):
        np.testing.assert_allclose(batched[col], alone[col], rtol=1e-5, atol=1e-6, err_msg=col)
    # and so the ranking: the same order wherever the scores are not tied to float rounding
    ranked_alone = ranking.order_by_trust(alone.reset_index())
    ranked = ranking.order_by_trust(batched.reset_index())
    gaps = np.diff(ranked_alone["trust_score"].to_numpy())
    if (gaps > 1e-5 * ranked_alone["trust_score"].abs().max()).all():
        assert ranked["series_id"].tolist() == ranked_alone["series_id"].tolist()


def test_batches_are_filled_by_context_length(fitted, new_obs, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[int]] = []
    real = fitted.levy

    class Spy:
        def __call__(self, batch):
            seen.append(batch.ctx_mask.sum(1).int().tolist())
            return real(batch)

    monkeypatch.setattr(fitted, "levy", Spy())
    ranking.score_series(fitted, new_obs, batch_series=3)
    # batches may be scored side by side (workers), so the spy sees them in completion order:
    # put them back in order of their shortest context before reading the lengths
    lengths = [n for batch in sorted(seen) for n in batch]
    assert lengths == sorted(lengths)  # each batch pads to its longest context, so sorted pads least
    assert len(seen) == -(-new_obs.n_series // 3)


def test_the_scaler_scales_a_channel_column_per_row(fitted, new_obs) -> None:
    frame = new_obs.frame
    scaler = fitted.scaler
    lo = frame["channel"].map(scaler.minimum).to_numpy(np.float64)
    hi = frame["channel"].map(scaler.maximum).to_numpy(np.float64)
    np.testing.assert_array_equal(scaler.check_range(frame), (frame["value"].to_numpy(np.float64) - lo) / (hi - lo))
    bad = frame.assign(channel=frame["channel"].astype(str).where(frame.index != frame.index[3], "nope"))
    with pytest.raises(DataError, match="nope"):
        scaler.check_range(bad)


def test_batches_scored_side_by_side_give_the_same_scores(fitted, synthetic_obs,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    before = torch.get_num_threads()
    one, _ = ranking.score_series(fitted, synthetic_obs, batch_series=4, workers=1)
    seen: list[tuple[str, int]] = []
    real = fitted.levy

    def spy(batch):
        seen.append((threading.current_thread().name, torch.get_num_threads()))
        return real(batch)

    monkeypatch.setattr(fitted, "levy", spy)
    two, _ = ranking.score_series(fitted, synthetic_obs, batch_series=4, workers=2)
    assert len(seen) == 10
    assert all(name.startswith("levy-score") and n == 1 for name, n in seen)  # one intra-op thread per worker
    assert torch.get_num_threads() == before
    pd.testing.assert_frame_equal(one, two, check_exact=True)
