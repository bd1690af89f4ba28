"""``levy_dashboard.services``: each wrapper returns what the ``levy_core`` call it wraps returns,
caches by its key (a hit calls nothing in ``levy_core``), and the fit store keeps what it
promises.

Fits are tiny (``LEVY_DASHBOARD_FAST=1`` settings) and made once per module. The caches stay
warm from test to test (as on a server): a test that counts the calls a cache saves asks for
``fresh_caches`` (the conftest), and one that doctors a model's data (a monkeypatched
``ModelData.points``) computes under a key of its own, never under the fit's.
Every comparison is exact: the wrapper and the direct call run the same seeded code on the
same single-threaded CPU (MC-Dropout seeds its own generator), so the numbers are bitwise
equal. Wall-clock fields (``TIMING_KEYS``) are the only values left out.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from dash_helpers import wide_csv
from levy_dashboard import charts, services
from levy_dashboard.display import report, tables
from levy_dashboard.fitting import fits
from levy_dashboard.fitting.fits import FitResult, FitSettings

from levy_core.data import ColumnMapping, DataError, Observations, preview_table
from levy_core.pipeline import diagnostics, evaluation, predict, ranking, recipe, user_frames
from levy_core.pipeline.prepared import ModelData

MC = 5  # MC-Dropout passes: default_mc_passes() with LEVY_DASHBOARD_FAST=1
BAD_XLSX = b"PK\x03\x04" + b"\x00" * 64  # a zip (xlsx) header: not CSV text


# ----------------------------------------------------------------------------- helpers


def assert_same(a: Any, b: Any, where: str = "value") -> None:
    """Exact, recursive equality of frames, arrays, dicts, sequences and scalars (NaN == NaN)."""
    if isinstance(a, pd.DataFrame):
        assert isinstance(b, pd.DataFrame), where
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=where)
        assert_same(dict(a.attrs), dict(b.attrs), f"{where}.attrs")
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where, strict=True)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{where}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, list | tuple):
        assert type(a) is type(b) and len(a) == len(b), f"{where}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), f"{where}: {a!r} != {b!r}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


# wall-clock results: "seconds" of each method, and MC-Dropout's cost ratio (a ratio of two timings)
TIMING_KEYS = frozenset({"seconds", "cost_vs_levy"})


def without_timings(value: Any) -> Any:
    """``value`` with every wall-clock entry (``TIMING_KEYS``) dropped, recursively."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    return value


def timing_paths(value: Any, path: str = "") -> list[str]:
    """Where the wall-clock entries of a nested dict are."""
    if not isinstance(value, dict):
        return []
    out = [f"{path}.{k}" for k in sorted(TIMING_KEYS & set(value))]
    for k, v in value.items():
        out += timing_paths(v, f"{path}.{k}")
    return out


class Counter:
    """Replaces a function (or method) with one that counts its calls and still does the work."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: Any, name: str):
        self.calls = 0
        original = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)


@dataclass(frozen=True)
class Sample:
    """The bundled sample as the dashboard loads it."""

    digest: str
    data: bytes
    name: str
    label: str
    obs: Observations
    obs_hash: str


# ----------------------------------------------------------------------------- fits (once per module)


@pytest.fixture(scope="module")
def settings() -> FitSettings:
    # module fixtures run before the conftest's function-scoped env patch: set it here too
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(fits.ENV_FAST, "1")
        s = services.fit.default_settings()
        assert services.fit.default_mc_passes() == MC
    assert (s.epochs, s.mc_passes, s.task, s.train_twin) == (3, MC, "interpolate", True)
    return s


@pytest.fixture(scope="module")
def sample() -> Sample:
    src = services.data.source_from_sample(services.data.DEFAULT_SAMPLE)
    obs = services.data.load_observations(src.digest, src.data, src.name)
    return Sample(src.digest, src.data, src.name, src.label, obs, services.data.data_key(obs))


@pytest.fixture(scope="module")
def res(sample: Sample, settings: FitSettings) -> FitResult:
    """Interpolation, Lévy + MC-Dropout twin, on the sample."""
    return services.fit.fit_model(sample.obs, sample.obs_hash, sample.label, settings)


@pytest.fixture(scope="module")
def fres(sample: Sample, settings: FitSettings) -> FitResult:
    """Forecast, no twin, on the sample."""
    return services.fit.fit_model(sample.obs, sample.obs_hash, sample.label,
                              dataclasses.replace(settings, task="forecast", train_twin=False))


@pytest.fixture(scope="module")
def wres(settings: FitSettings) -> FitResult:
    """One wide-form series: the model's series are time windows of it (``id@k``)."""
    up = services.data.source_from_upload("wide.csv", wide_csv())
    obs = services.data.load_observations(up.digest, up.data, up.name)
    return services.fit.fit_model(obs, services.data.data_key(obs), up.label,
                                  dataclasses.replace(settings, train_twin=False))


@pytest.fixture(scope="module")
def evaluated(res: FitResult) -> tuple[dict[str, Any], pd.DataFrame]:
    return evaluation.evaluate(res.fitted, res.data, mc_passes=MC)


@pytest.fixture(scope="module")
def pick(res: FitResult) -> tuple[str, str]:
    """A test series of ``res`` and its channel with most held-out observations."""
    sid = res.data.series_choices()[0]
    assert res.data.role_of(sid) == "test"
    return sid, res.data.channels_of(sid, res.fitted.channels)[0]


@pytest.fixture(scope="module")
def query(res: FitResult, pick: tuple[str, str]) -> float:
    """The time of the first held-out observation of ``pick``."""
    sid, ch = pick
    pts = res.data.points()
    return float(pts[(pts["series_id"] == sid) & (pts["channel"] == ch) & (pts["role"] == "held-out")]
                 ["time"].iloc[0])


# ----------------------------------------------------------------------------- data


def test_raw_table_is_preview_table(sample: Sample):
    assert_same(services.data.raw_table(sample.digest, sample.data, sample.name), preview_table(sample.data, sample.name))
    short = services.data.raw_table(sample.digest, sample.data, sample.name, 7)
    assert_same(short, preview_table(sample.data, sample.name, 7))
    assert len(short) == 7


def test_raw_table_refuses_a_spreadsheet_with_a_message():
    with pytest.raises(DataError, match="spreadsheet") as err:
        services.data.raw_table("xlsx-digest", BAD_XLSX, "book.xlsx")
    assert "book.xlsx" in str(err.value)


def test_detected_mapping(sample: Sample):
    raw = services.data.raw_table(sample.digest, sample.data, sample.name)
    mapping, why = services.data.detected_mapping(raw)
    assert why is None and mapping == ColumnMapping(time="time", value="value", series="series_id",
                                                    channel="channel", layout="long")
    mapping, why = services.data.detected_mapping(pd.DataFrame({"foo": ["1"], "bar": ["2"]}))
    assert mapping is None and "No time column" in why


def test_mapping_json_round_trip():
    wide = ColumnMapping(time="when", series="unit", wide_channels=("hr", "sbp", "temp"), layout="wide")
    text = services.data.mapping_to_json(wide)
    assert json.loads(text)["wide_channels"] == ["hr", "sbp", "temp"]
    back = services.data.mapping_from_json(text)
    assert back == wide and isinstance(back.wide_channels, tuple)
    assert services.data.mapping_to_json(back) == text  # stable: usable as a cache key
    assert services.data.mapping_to_json(None) is None and services.data.mapping_from_json(None) is None
    assert services.data.mapping_from_json("") is None


def test_load_observations_reads_the_bytes_with_the_mapping(sample: Sample):
    renamed = sample.data.decode().replace("series_id,channel,time,value", "unit,sensor,when,reading", 1).encode()
    assert renamed != sample.data
    mapping = ColumnMapping(time="when", value="reading", series="unit", channel="sensor")
    obs = services.data.load_observations("renamed", renamed, "odd.csv", services.data.mapping_to_json(mapping))
    pd.testing.assert_frame_equal(obs.frame, sample.obs.frame)
    renamed_key = services.data.content_hash("renamed", services.data.mapping_to_json(mapping), "hours", obs)
    assert obs.content_hash() == sample.obs.content_hash() and renamed_key != sample.obs_hash  # read from other columns
    minutes = services.data.load_observations(sample.digest, sample.data, sample.name, None, "minutes")
    # read_csv multiplies by fl(1/60), here we divide by 60: three roundings of at most 2^-53
    # relative each (1/60, the product, the quotient), so 4 · 2^-53 bounds the difference
    np.testing.assert_allclose(minutes.frame["time"].to_numpy(), sample.obs.frame["time"].to_numpy() / 60,
                               rtol=4 * 2.0**-53, atol=0)


def test_data_key_is_the_frame_and_how_it_was_read():
    """Equal frames read from other days, or in other units, or from other columns, are other
    data (the views write their times in the user's clock, the Data panel lists what was
    read); the same bytes read the same way are the same key."""
    def read(data: bytes, unit: str = "hours") -> Observations:
        return services.data.load_observations(hashlib.sha256(data).hexdigest(), data, "x.csv", None, unit)

    spring = wide_csv()
    frame = pd.read_csv(io.BytesIO(spring))
    shifted = pd.to_datetime(frame["timestamp"]) + pd.Timedelta(days=400)
    autumn = frame.assign(timestamp=shifted.astype(str)).to_csv(index=False).encode()
    a, b = read(spring), read(autumn)
    assert a.frame.equals(b.frame) and a.content_hash() == b.content_hash()
    assert services.data.data_key(a) != services.data.data_key(b)
    assert services.data.data_key(a) == services.data.data_key(read(bytes(spring)))
    hours = b"series_id,channel,time,value\ns,c,0,1.0\ns,c,1,2.0\ns,c,2,1.5\n"
    minutes = hours.replace(b",1,2.0", b",60,2.0").replace(b",2,1.5", b",120,1.5")
    h, m = read(hours), read(minutes, "minutes")
    assert h.frame.equals(m.frame) and services.data.data_key(h) != services.data.data_key(m)
    noted = hours.replace(b"value\n", b"value,ward\n").replace(b"\ns,c,0,1.0", b"\ns,c,0,1.0,7")
    assert read(noted).frame.equals(h.frame) and services.data.data_key(read(noted)) != services.data.data_key(h)


def test_load_observations_bad_upload_raises_and_is_not_cached(monkeypatch: pytest.MonkeyPatch):
    reads = Counter(monkeypatch, services.data, "read_csv")
    for _ in range(2):
        with pytest.raises(DataError, match="spreadsheet"):
            services.data.load_observations("xlsx-digest", BAD_XLSX, "book.csv")
    assert reads.calls == 2  # a failure is never served from the cache


def test_cutoff_range_is_pipeline(sample: Sample):
    for seed in (0, 1):
        assert_same(services.fit.cutoff_range(sample.obs_hash, sample.obs, seed), recipe.cutoff_range(sample.obs, seed))
    lo, hi, default = services.fit.cutoff_range(sample.obs_hash, sample.obs)
    assert lo <= default <= hi


# ----------------------------------------------------------------------------- views of a fit


def test_model_points_series_and_channels_are_model_data(res: FitResult, wres: FitResult):
    for r in (res, wres):
        assert_same(services.band.model_points(r.key, r), r.data.points())
        choices = services.band.series_choices(r.key, r)
        assert_same(choices, r.data.series_choices())
        for sid in choices[:3] + choices[-2:]:
            assert_same(services.band.channels_of(r.key, r, sid), r.data.channels_of(sid, r.fitted.channels))
            assert services.band.split_of(r.key, r, sid) == r.data.role_of(sid)
    assert services.band.split_of(res.key, res, "no such series") == "unseen"


def test_grid_is_predict_grid(res: FitResult, pick: tuple[str, str]):
    sid, ch = pick
    assert services.band.grid_points() == 120  # LEVY_DASHBOARD_FAST=1
    g = services.band.grid(res.key, res, sid, ch, MC)
    assert_same(g, predict.predict_grid(res.fitted, res.data, [sid], [ch], n_points=120, mc_passes=MC))
    assert len(g) == 120 and "mc_mean" in g.columns
    g = services.band.grid(res.key, res, sid, ch, 3, n_points=17)
    assert_same(g, predict.predict_grid(res.fitted, res.data, [sid], [ch], n_points=17, mc_passes=3))


def test_grid_of_a_fit_without_twin_skips_mc_dropout(fres: FitResult):
    sid = fres.data.series_choices()[0]
    ch = fres.data.channels_of(sid, fres.fitted.channels)[0]
    g = services.band.grid(fres.key, fres, sid, ch, MC)
    assert_same(g, predict.predict_grid(fres.fitted, fres.data, [sid], [ch], n_points=120, mc_passes=0))
    assert "mc_mean" not in g.columns


def test_evaluation_is_evaluate(res: FitResult, evaluated: tuple[dict[str, Any], pd.DataFrame]):
    result, pred = services.evaluation.evaluation(res.key, res, MC)
    assert_same(pred, evaluated[1], "per-query frame")
    assert timing_paths(result) == timing_paths(evaluated[0])  # wall times: only their places compare
    assert ".levy.seconds" in timing_paths(result)
    assert_same(without_timings(result), without_timings({k: v for k, v in evaluated[0].items() if k != "sampler_50"}),
                "metrics")
    assert result["mc_dropout"]["passes"] == MC
    assert "sampler_50" not in result and "sampler_50" in evaluated[0]  # on demand: sampler_check
    assert_same(services.evaluation.sampler_check(res.key, res), evaluated[0]["sampler_50"], "sampler check")


def test_ranking_is_rank(res: FitResult):
    ranked, seconds = services.evaluation.ranking(res.key, res)
    direct, _ = ranking.rank(res.fitted, res.data)
    assert_same(ranked, direct)
    assert isinstance(seconds, float) and seconds >= 0


def test_attention_is_attention_weights(res: FitResult, pick: tuple[str, str], query: float):
    sid, ch = pick
    w = services.evidence.attention(res.key, res, sid, ch, query)
    assert_same(w, diagnostics.attention_weights(res.fitted, res.data, sid, ch, query))
    assert "data_share" in w.attrs  # survives the cache's pickling


def test_draws_same_seed_same_draws(res: FitResult, pick: tuple[str, str], query: float):
    sid, ch = pick
    out = services.evidence.draws(res.key, res, sid, ch, query, 200, seed=3)
    assert_same(out, diagnostics.operator_draws(res.fitted, res.data, sid, ch, query, n_draws=200, seed=3))
    assert out["draws"].shape == (200,)
    other = services.evidence.draws(res.key, res, sid, ch, query, 200, seed=4)
    assert not np.array_equal(out["draws"], other["draws"])  # the seed is passed through
    y = 1.0
    assert services.evidence.query_crps(out, y) == diagnostics.query_crps(out, y, 50)
    assert services.evidence.query_crps(out, y, 20) == diagnostics.query_crps(out, y, 20)


def test_test_predictions_is_split_predictions(res: FitResult, monkeypatch: pytest.MonkeyPatch):
    assert_same(services.evidence.test_predictions(res.key, res), predict.split_predictions(res.fitted, res.data, "test"))

    def no_test_series(*args: Any, **kwargs: Any) -> pd.DataFrame:
        raise DataError("no test series with both context and observations to predict")

    monkeypatch.setattr(predict, "split_predictions", no_test_series)
    assert services.evidence.test_predictions(f"{res.key}~no-test-series", res).empty


def test_calibration_tables_are_pipeline(res: FitResult, evaluated: tuple[dict[str, Any], pd.DataFrame]):
    pred = evaluated[1]
    assert_same(services.evaluation.calibration_curves(res.key, res, MC), evaluation.calibration_curves(res.fitted, pred))
    assert_same(services.evaluation.guarantee_table(res.key, res, MC),
                tables.guarantee_table(evaluation.coverage_checks(res.fitted, pred)))
    for level in (0.5, 0.9):
        assert_same(services.evaluation.channel_coverage(res.key, res, MC, level),
                    evaluation.channel_coverage(res.fitted, pred, level))
    note = services.evaluation.coverage_note(res.key, res, MC)
    assert note == evaluation.evaluation_note(res.data, pred).text == evaluated[0]["coverage_note"]["text"]


def test_small_delegations(res: FitResult, evaluated: tuple[dict[str, Any], pd.DataFrame]):
    result, pred = services.evaluation.evaluation(res.key, res, MC)
    assert_same(services.evaluation.timing_rows(res, result), tables.timing_rows(res.fitted.training, result))
    for i in (0, len(pred) // 2, len(pred) - 1):
        assert services.evidence.width_factors(pred.iloc[i], pred) == diagnostics.width_factors(pred.iloc[i], pred)
    assert services.fit.MODEL_SIZES is recipe.MODEL_SIZES
    assert services.evaluation.metrics_table is tables.metrics_table


def test_heldout_predictions_in_model_space(wres: FitResult, res: FitResult):
    for r in (wres, res):
        pts = r.data.points()
        for sid in r.data.series_choices()[:2]:
            held = pts[(pts["series_id"] == sid) & (pts["role"] == "held-out")].reset_index(drop=True)
            assert len(held) > 0
            pred = services.evidence.heldout_predictions(r.key, r, sid)
            assert len(pred) == len(held)  # one row per held-out observation
            assert set(pred["series_id"]) == {sid} and sid in r.data.builder.series  # model space
            assert_same(pred["channel"].tolist(), held["channel"].tolist())
            np.testing.assert_array_equal(pred["time"].to_numpy(), held["time"].to_numpy())
            np.testing.assert_array_equal(pred["y_true"].to_numpy(), held["value"].to_numpy())
            direct = predict.predict_queries(r.fitted, r.data, held[["series_id", "channel", "time"]])
            assert_same(pred.drop(columns="y_true"), direct)
    user_ids = set(wres.obs.frame["series_id"])
    assert not set(wres.data.series_choices()) & user_ids  # windows: model ids are not the user's


def test_heldout_predictions_of_a_series_without_held_out(res: FitResult, monkeypatch: pytest.MonkeyPatch):
    sid = res.data.series_choices()[0]
    points = ModelData.points

    def nothing_held_out(self: ModelData) -> pd.DataFrame:
        out = points(self)
        return out.assign(role=out["role"].replace("held-out", "context"))

    monkeypatch.setattr(ModelData, "points", nothing_held_out)
    pred = services.evidence.heldout_predictions(f"{res.key}~nothing-held-out", res, sid)  # other data: its own key
    assert pred.empty and {"series_id", "channel", "time", "y_true", "mean", "pred_std"} <= set(pred.columns)


# ----------------------------------------------------------------------------- band inputs


def test_band_inputs_bands_are_with_bands(res: FitResult, pick: tuple[str, str]):
    sid, ch = pick
    plain = predict.predict_grid(res.fitted, res.data, [sid], [ch], n_points=120, mc_passes=MC)
    for level, kind in ((0.9, "gaussian"), (0.6, "conformal")):
        inputs = services.band.band_inputs(res.key, res, sid, ch, level, kind, MC)
        expected = user_frames.with_bands(plain, res.fitted, level, kind)
        assert_same(inputs.grid[["lower", "upper", "mc_lower", "mc_upper"]],
                    expected[["lower", "upper", "mc_lower", "mc_upper"]])
        assert_same(inputs.grid.drop(columns="when"), expected)
        np.testing.assert_array_equal(inputs.grid["when"], expected["time"])  # the sample's clock: hours
        assert (inputs.series_id, inputs.channel, inputs.level, inputs.show_mc) == (sid, ch, level, True)
        assert inputs.band_label == ("conformal" if kind == "conformal" else "scaled Gaussian")


@pytest.mark.usefixtures("fresh_caches")
def test_band_inputs_moving_level_or_kind_runs_no_model(res: FitResult, pick: tuple[str, str],
                                                         monkeypatch: pytest.MonkeyPatch):
    sid, ch = pick
    first = services.band.band_inputs(res.key, res, sid, ch, 0.9, "gaussian", MC)
    grids = Counter(monkeypatch, predict, "predict_grid")
    narrow = services.band.band_inputs(res.key, res, sid, ch, 0.5, "gaussian", MC)
    conformal = services.band.band_inputs(res.key, res, sid, ch, 0.9, "conformal", MC)
    assert grids.calls == 0
    assert (narrow.grid["upper"] - narrow.grid["lower"] < first.grid["upper"] - first.grid["lower"]).all()
    assert not conformal.grid["upper"].equals(first.grid["upper"])
    services.band.band_inputs(res.key, res, sid, ch, 0.9, "gaussian", 3)  # another T is another model pass
    assert grids.calls == 1


def test_band_inputs_points_are_the_series_channel_without_unused(res: FitResult, pick: tuple[str, str],
                                                                   monkeypatch: pytest.MonkeyPatch):
    sid, ch = pick
    points = ModelData.points

    def some_unused(self: ModelData) -> pd.DataFrame:  # the sample has none: make every third one unused
        out = points(self)
        out.loc[out.index % 3 == 0, "role"] = "unused"
        return out

    monkeypatch.setattr(ModelData, "points", some_unused)
    pts = some_unused(res.data)
    inputs = services.band.band_inputs(f"{res.key}~some-unused", res, sid, ch, 0.9, "gaussian", MC)  # its own key
    expected = pts[(pts["series_id"] == sid) & (pts["channel"] == ch) & (pts["role"] != "unused")]
    assert_same(inputs.points.drop(columns="when"), expected)
    assert set(inputs.points["series_id"]) == {sid} and set(inputs.points["channel"]) == {ch}
    assert set(inputs.points["role"]) == {"context", "held-out"}
    assert ((pts["series_id"] == sid) & (pts["channel"] == ch) & (pts["role"] == "unused")).any()


def test_band_inputs_cutoff_and_mc(res: FitResult, fres: FitResult, pick: tuple[str, str]):
    sid, ch = pick
    assert services.band.band_inputs(res.key, res, sid, ch, 0.9, "gaussian", MC).cutoff is None  # interpolation
    no_mc = services.band.band_inputs(res.key, res, sid, ch, 0.9, "gaussian", MC, show_mc=False)
    assert not no_mc.show_mc and "mc_lower" not in no_mc.grid.columns
    fsid = fres.data.series_choices()[0]
    fch = fres.data.channels_of(fsid, fres.fitted.channels)[0]
    f = services.band.band_inputs(fres.key, fres, fsid, fch, 0.9, "gaussian", MC)
    assert fres.fitted.task.kind == "forecast"
    assert f.cutoff == fres.fitted.task.cutoff and f.cutoff is not None
    assert not f.show_mc  # no twin


def test_the_reports_band_is_band_figure(res: FitResult, pick: tuple[str, str]):
    inputs = services.band.band_inputs(res.key, res, *pick, 0.8, "conformal", MC)
    assert inputs.figure_arguments() == {"series_id": pick[0], "channel": pick[1], "level": 0.8,
                                         "band_label": "conformal", "show_mc": True, "cutoff": None,
                                         "time_axis": "time (hours)"}
    direct = charts.band_figure(inputs.grid, inputs.points, **inputs.figure_arguments())
    gathered = services.report.report_inputs(res.key, res, MC, series_id=pick[0], channel=pick[1], level=0.8,
                                             kind="conformal")
    title, figure, _ = report.report_figures(gathered)[0]
    assert title == "Predictive band" and figure.to_json() == direct.to_json()


# ----------------------------------------------------------------------------- caching

# name → (what it calls in levy_core: owner, attribute), a call, a call with another key
Case = tuple[tuple[Any, str], Callable[..., Any], Callable[..., Any]]


def _cases() -> dict[str, Case]:
    return {
        "raw_table": ((services.data, "preview_table"),
                      lambda r, s, p, q: services.data.raw_table(s.digest, s.data, s.name),
                      lambda r, s, p, q: services.data.raw_table("other", s.data, s.name)),
        "cutoff_range": ((recipe, "cutoff_range"),
                         lambda r, s, p, q: services.fit.cutoff_range(s.obs_hash, s.obs),
                         lambda r, s, p, q: services.fit.cutoff_range("other", s.obs)),
        "own_cutoffs_by_default": ((recipe, "own_cutoffs_by_default"),
                                   lambda r, s, p, q: services.fit.own_cutoffs_by_default(s.obs_hash, s.obs),
                                   lambda r, s, p, q: services.fit.own_cutoffs_by_default("other", s.obs)),
        "model_points": ((ModelData, "points"), lambda r, s, p, q: services.band.model_points(r.key, r),
                         lambda r, s, p, q: services.band.model_points("other", r)),
        "series_choices": ((ModelData, "series_choices"), lambda r, s, p, q: services.band.series_choices(r.key, r),
                           lambda r, s, p, q: services.band.series_choices("other", r)),
        "channels_of": ((ModelData, "channels_of"), lambda r, s, p, q: services.band.channels_of(r.key, r, p[0]),
                        lambda r, s, p, q: services.band.channels_of("other", r, p[0])),
        "grid": ((predict, "predict_grid"), lambda r, s, p, q: services.band.grid(r.key, r, *p, MC),
                 lambda r, s, p, q: services.band.grid(r.key, r, *p, 3)),
        "heldout_predictions": ((predict, "predict_queries"),
                                lambda r, s, p, q: services.evidence.heldout_predictions(r.key, r, p[0]),
                                lambda r, s, p, q: services.evidence.heldout_predictions("other", r, p[0])),
        "test_predictions": ((predict, "split_predictions"), lambda r, s, p, q: services.evidence.test_predictions(r.key, r),
                             lambda r, s, p, q: services.evidence.test_predictions("other", r)),
        "evaluation": ((evaluation, "evaluate"), lambda r, s, p, q: services.evaluation.evaluation(r.key, r, MC),
                       lambda r, s, p, q: services.evaluation.evaluation(r.key, r, 3)),
        "calibration_curves": ((evaluation, "calibration_curves"),
                               lambda r, s, p, q: services.evaluation.calibration_curves(r.key, r, MC),
                               lambda r, s, p, q: services.evaluation.calibration_curves("other", r, MC)),
        "guarantee_table": ((evaluation, "coverage_checks"),
                            lambda r, s, p, q: services.evaluation.guarantee_table(r.key, r, MC),
                            lambda r, s, p, q: services.evaluation.guarantee_table("other", r, MC)),
        "channel_coverage": ((evaluation, "channel_coverage"),
                             lambda r, s, p, q: services.evaluation.channel_coverage(r.key, r, MC, 0.9),
                             lambda r, s, p, q: services.evaluation.channel_coverage(r.key, r, MC, 0.8)),
        "sampler_check": ((evaluation, "sampler_check"), lambda r, s, p, q: services.evaluation.sampler_check(r.key, r),
                          lambda r, s, p, q: services.evaluation.sampler_check("other", r)),
        "ranking": ((ranking, "rank"), lambda r, s, p, q: services.evaluation.ranking(r.key, r),
                    lambda r, s, p, q: services.evaluation.ranking("other", r)),
        "attention": ((diagnostics, "attention_weights"), lambda r, s, p, q: services.evidence.attention(r.key, r, *p, q),
                      lambda r, s, p, q: services.evidence.attention(r.key, r, *p, q + 0.5)),
        "draws": ((diagnostics, "operator_draws"), lambda r, s, p, q: services.evidence.draws(r.key, r, *p, q, 100),
                  lambda r, s, p, q: services.evidence.draws(r.key, r, *p, q, 100, seed=1)),
    }


CASES = _cases()


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.usefixtures("fresh_caches")
def test_cache_data_hit_calls_nothing(name: str, res: FitResult, sample: Sample, pick: tuple[str, str],
                                      query: float, monkeypatch: pytest.MonkeyPatch):
    (owner, attr), call, other_key = CASES[name]
    first = call(res, sample, pick, query)
    counter = Counter(monkeypatch, owner, attr)
    again = call(res, sample, pick, query)
    assert counter.calls == 0, f"{name}: a cache hit called {attr}"
    assert_same(again, first)  # st.cache_data: an equal copy
    other_key(res, sample, pick, query)
    assert counter.calls >= 1, f"{name}: another key should compute (the counter must see it)"


@pytest.mark.usefixtures("fresh_caches")
def test_cache_resource_hits_return_the_same_object(sample: Sample, monkeypatch: pytest.MonkeyPatch):
    obs = services.data.load_observations(sample.digest, sample.data, sample.name)
    h = services.data.content_hash(sample.digest, None, "hours", obs)
    reads = Counter(monkeypatch, services.data, "read_csv")
    hashes = Counter(monkeypatch, Observations, "content_hash")
    assert services.data.load_observations(sample.digest, sample.data, sample.name) is obs
    assert services.data.content_hash(sample.digest, None, "hours", obs) is h
    assert reads.calls == 0 and hashes.calls == 0
    assert services.data.load_observations(sample.digest, sample.data, sample.name, None, "minutes") is not obs
    assert reads.calls == 1
    assert h == sample.obs_hash


# ----------------------------------------------------------------------------- the fit store


def test_fit_key_differs_when_any_setting_differs(sample: Sample, settings: FitSettings):
    other = {"task": "forecast", "cutoff": 12.0, "horizon": 36.0, "holdout_fraction": 0.3, "size": "medium", "epochs": 4,
             "max_seconds": 2.0, "train_twin": False, "mc_passes": 6, "seed": 1, "transform": "none"}
    assert set(other) == {f.name for f in dataclasses.fields(FitSettings)}  # every field is tried
    base = services.fit.fit_key(sample.obs_hash, settings)
    assert services.fit.fit_key(sample.obs_hash, dataclasses.replace(settings)) == base
    keys = {base}
    for name, value in other.items():
        assert getattr(settings, name) != value
        keys.add(services.fit.fit_key(sample.obs_hash, dataclasses.replace(settings, **{name: value})))
    assert len(keys) == len(other) + 1
    assert services.fit.fit_key("f" * 64, settings) != base


@pytest.mark.usefixtures("fresh_caches")
def test_fit_model_twice_is_the_same_result(wres: FitResult, monkeypatch: pytest.MonkeyPatch):
    obs, s = wres.obs, wres.settings
    h = services.data.data_key(obs)
    fitting = Counter(monkeypatch, recipe, "fit")
    first = services.fit.fit_model(obs, h, "upload: wide.csv", s)
    assert fitting.calls == 1 and first.key == services.fit.fit_key(h, s) == wres.key
    assert services.fit.cached_fit(first.key) is first
    assert services.fit.fit_model(obs, h, "upload: wide.csv", s) is first
    assert fitting.calls == 1
    seeded = services.fit.fit_model(obs, h, "upload: wide.csv", dataclasses.replace(s, seed=1))
    assert fitting.calls == 2 and seeded.key != first.key
    assert services.fit.fit_model(obs, h, "upload: wide.csv", s) is first  # both kept


def test_fit_result_records_the_fit(res: FitResult, sample: Sample, settings: FitSettings):
    assert res.key == services.fit.fit_key(sample.obs_hash, settings)
    assert res.obs is sample.obs and res.obs_hash == sample.obs_hash and res.settings == settings
    assert res.data_label == sample.label and res.has_twin and res.data.same_data
    assert {h["model"] for h in res.history} == {"levy", "softmax"}
    assert res.fitted.train_config.epochs == settings.epochs and res.fitted.mc_passes == MC


def dummies(res: FitResult, n: int) -> list[FitResult]:
    return [dataclasses.replace(res, key=f"dummy-{i}") for i in range(n)]


def test_store_keeps_at_most_FIT_STORE_SIZE(res: FitResult):
    n = fits.FIT_STORE_SIZE
    made = dummies(res, n + 2)
    for r in made:
        assert fits.remember(r) is r
    assert [services.fit.cached_fit(r.key) for r in made[:2]] == [None, None]  # the oldest two are out
    for r in made[2:]:
        assert services.fit.cached_fit(r.key) is r
    again = dataclasses.replace(made[2], seconds=99.0)  # same key: replaced, not added
    fits.remember(again)
    assert services.fit.cached_fit(again.key) is again
    fits.remember(dummies(res, n + 3)[-1])  # made[2] was just stored again: made[3] is the oldest
    assert services.fit.cached_fit(made[3].key) is None and services.fit.cached_fit(again.key) is again


def test_store_evicts_least_recently_used(res: FitResult):
    made = dummies(res, fits.FIT_STORE_SIZE + 1)
    for r in made[:-1]:
        fits.remember(r)
    assert services.fit.cached_fit(made[0].key) is made[0]  # used: now the most recent
    fits.remember(made[-1])
    assert services.fit.cached_fit(made[1].key) is None  # the least recently used is out
    assert services.fit.cached_fit(made[0].key) is made[0]


# ----------------------------------------------------------------------------- add_twin


def test_add_twin(fres: FitResult, monkeypatch: pytest.MonkeyPatch):
    assert not fres.has_twin
    twin = services.fit.add_twin(fres)
    assert twin.has_twin and twin.key == fres.key + "+twin"
    assert twin.data is fres.data and twin.obs_hash == fres.obs_hash and twin.data_label == fres.data_label
    assert twin.settings == dataclasses.replace(fres.settings, train_twin=True)
    before, after = fres.fitted.levy.state_dict(), twin.fitted.levy.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert twin.fitted.levy_calibration.to_dict() == fres.fitted.levy_calibration.to_dict()
    assert twin.fitted.mc_passes == fres.settings.mc_passes
    assert fres.fitted.twin is None  # the original is left as it was
    assert [h for h in twin.history if h["model"] == "levy"] == [h for h in fres.history if h["model"] == "levy"]
    assert any(h["model"] == "softmax" for h in twin.history)
    adding = Counter(monkeypatch, recipe, "add_twin")
    assert services.fit.add_twin(fres) is twin and services.fit.cached_fit(twin.key) is twin
    assert services.fit.add_twin(twin) is twin
    assert adding.calls == 0


# ----------------------------------------------------------------------------- exports


def test_prediction_csv_has_the_pred_columns_in_order(res: FitResult):
    _, pred = services.evaluation.evaluation(res.key, res, MC)
    shuffled = pred[list(reversed(pred.columns))].assign(extra=1.0)
    out = pd.read_csv(io.BytesIO(services.evaluation.prediction_csv(shuffled)), dtype={"series_id": str})
    assert list(out.columns) == evaluation.PRED_COLUMNS
    expected = pred[evaluation.PRED_COLUMNS].reset_index(drop=True)
    # exact: the CSV holds each float's shortest round-trip text (float32 columns as float32's),
    # so parsing it back into the column's own dtype gives the same bits
    pd.testing.assert_frame_equal(out.astype(expected.dtypes.to_dict()), expected, check_exact=True)
    no_mc = pred.drop(columns=["mc_mean", "mc_std"])
    header = services.evaluation.prediction_csv(no_mc).decode().splitlines()[0].split(",")
    assert header == [c for c in evaluation.PRED_COLUMNS if c not in ("mc_mean", "mc_std")]


def test_build_report(res: FitResult, pick: tuple[str, str]):
    result, _ = services.evaluation.evaluation(res.key, res, MC)
    metrics_html = services.evaluation.metrics_table(result).to_html(float_format=lambda v: f"{v:.4g}")
    guarantee_html = services.evaluation.guarantee_table(res.key, res, MC).to_html(index=False)
    plain = report.build_report(services.report.report_inputs(res.key, res, MC))
    with_band = report.build_report(services.report.report_inputs(res.key, res, MC, series_id=pick[0],
                                                                  channel=pick[1], level=0.8))
    for page in (plain, with_band):
        assert report.report_is_offline(page) and "plotly.js v" in page
        assert metrics_html in page and guarantee_html in page
        assert html.escape(res.describe()) in page
    assert "<h2>Predictive band</h2>" not in plain and plain.count("Plotly.newPlot") == 6
    assert "<h2>Predictive band</h2>" in with_band and with_band.count("Plotly.newPlot") == 7
    assert with_band.index("<h2>Predictive band</h2>") < with_band.index("<h2>Reliability</h2>")
    assert f"series {pick[0]}" in with_band and f"series {pick[0]}" not in plain
    assert report.report_is_offline(plain.replace("<script", "<script src='https://cdn.plot.ly/x.js'", 1)) is False
