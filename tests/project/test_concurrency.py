"""One model shared by concurrent sessions (the dashboard caches fitted models across them):
threads running MC-Dropout and the deterministic twin on ONE model get, bit for bit, what
each call gets alone; neither the model's mode nor the global RNG moves."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from levy_core.model.batch import Batch
from levy_core.model.config import ModelConfig
from levy_core.model.levy_model import LevyModel
from levy_core.model.softmax_twin import SoftmaxTwin

N_THREADS = 4
ROUNDS = 6  # jobs of each kind per thread


def make_batch(lengths: list[tuple[int, int]], seed: int) -> Batch:
    """Random episodes of 3 channels, ``lengths`` = (context, queries) per series, padded."""
    g = torch.Generator().manual_seed(seed)
    N, M = max(n for n, _ in lengths), max(m for _, m in lengths)
    fields = [torch.zeros(len(lengths), size) for size in (N, N, N, N, M, M, M)]
    for b, (n, m) in enumerate(lengths):
        fields[0][b, :n] = torch.sort(torch.rand(n, generator=g) * 24).values
        fields[1][b, :n] = torch.randint(0, 3, (n,), generator=g).float()
        fields[2][b, :n] = torch.rand(n, generator=g)
        fields[3][b, :n] = 1.0
        fields[4][b, :m] = 24 + torch.rand(m, generator=g) * 24
        fields[5][b, :m] = torch.randint(0, 3, (m,), generator=g).float()
        fields[6][b, :m] = 1.0
    fields[1], fields[5] = fields[1].long(), fields[5].long()
    return Batch(*fields)


@pytest.fixture(scope="module")
def models() -> tuple[SoftmaxTwin, LevyModel]:
    torch.manual_seed(0)
    cfg = ModelConfig(n_channels=3, channel_layers=1, context_layers=1)  # every dropout site in play
    return SoftmaxTwin(cfg).eval(), LevyModel(cfg).eval()


def jobs() -> list[tuple[str, int]]:
    return [(kind, i) for i in range(ROUNDS) for kind in ("mc", "softmax", "levy")]


def run(models: tuple[SoftmaxTwin, LevyModel], kind: str, i: int) -> tuple[torch.Tensor, ...]:
    twin, levy = models
    batch = make_batch([(9, 4), (5, 4), (12, 4)], seed=i)
    with torch.no_grad():
        if kind == "mc":
            return twin.mc_dropout(batch, passes=5, generator_seed=100 + i)
        if kind == "softmax":
            return (twin(batch).mean,)
        out = levy(batch)
        return out.mean, out.sigma


def test_threads_on_one_shared_model_give_the_single_threaded_results(models) -> None:
    expected = {job: run(models, *job) for job in jobs()}  # one thread, one call at a time
    rng = torch.random.get_rng_state()
    start = threading.Barrier(N_THREADS)

    def worker(offset: int) -> dict:
        start.wait()  # all threads at once
        order = jobs()[offset:] + jobs()[:offset]  # each thread in another order: calls overlap
        return {job: run(models, *job) for job in order}

    with ThreadPoolExecutor(N_THREADS) as pool:
        results = list(pool.map(worker, [k * 5 for k in range(N_THREADS)]))
    differing = [(t, job) for t, got in enumerate(results) for job, tensors in got.items()
                 if not all(torch.equal(a, b) for a, b in zip(tensors, expected[job], strict=True))]
    assert differing == [], f"{len(differing)} of {N_THREADS * len(jobs())} results differ, e.g. {differing[:4]}"
    assert not models[0].training and not models[1].training, "nobody switched the shared models' mode"
    assert torch.equal(torch.random.get_rng_state(), rng), "nobody reseeded the global RNG"


def test_mc_dropout_leaves_the_model_and_the_global_rng_alone(models, monkeypatch) -> None:
    twin = models[0]
    batch = make_batch([(9, 4), (5, 4)], seed=1)
    calls = []
    monkeypatch.setattr(twin, "train", lambda mode=True: calls.append(mode))
    torch.manual_seed(1)
    first = twin.mc_dropout(batch, passes=6, generator_seed=7)
    after_first = torch.rand(3)
    torch.manual_seed(1)
    after_none = torch.rand(3)
    torch.manual_seed(12345)  # another global state: the same masks
    second = twin.mc_dropout(batch, passes=6, generator_seed=7)
    assert calls == [] and not twin.training
    assert torch.equal(after_first, after_none), "the global RNG did not advance"
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    other = twin.mc_dropout(batch, passes=6, generator_seed=8)
    assert not torch.equal(first[1], other[1]), "the seed picks the masks"
    mask = batch.qry_mask > 0
    assert (first[1][mask] > 0).all(), "dropout is on in every pass"


def test_mc_dropout_gives_the_same_numbers_in_either_mode() -> None:
    """The masks come from the call's generator, not from the module's mode; the context
    layers have no dropout of their own, so the default model (no context layers) is exact."""
    torch.manual_seed(0)
    twin = SoftmaxTwin(ModelConfig(n_channels=3, channel_layers=2))
    batch = make_batch([(9, 4), (5, 4)], seed=2)
    in_eval = twin.eval().mc_dropout(batch, passes=4, generator_seed=3)
    in_train = twin.train().mc_dropout(batch, passes=4, generator_seed=3)
    assert twin.training, "the mode it was in is the mode it stays in"
    assert all(torch.equal(a, b) for a, b in zip(in_eval, in_train, strict=True))


def test_mc_dropout_band_is_smooth_along_the_grid() -> None:
    """One mask per pass across the queries: each pass is a smooth function of the query
    time, so the MC band does not jitter between neighbouring grid points by its Monte-Carlo
    error. With a fresh mask per query, about half of the steps of the spread reverse sign
    (noise); here few do."""
    from levy_core.data import load_sample
    from levy_core.episodes.tasks import TaskConfig
    from levy_core.pipeline.predict import predict_grid
    from levy_core.pipeline.recipe import fit
    from levy_core.training.train import TrainConfig

    obs = load_sample("Synthetic multichannel")
    fitted = fit(obs, task=TaskConfig("interpolate"), train=TrainConfig(epochs=2, seed=0), mc_passes=5)
    grid = predict_grid(fitted, obs, obs.series_ids[:2], n_points=200, mc_passes=20)
    for _, g in grid.groupby(["series_id", "channel"]):
        step = np.diff(g["mc_std"].to_numpy())
        reversals = np.mean(np.sign(step[1:]) != np.sign(step[:-1]))
        assert reversals < 0.25, f"the MC band jitters: {reversals:.0%} of its steps reverse"
