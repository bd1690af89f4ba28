"""The fit recipe in reusable steps: prepare → train → calibrate.

``pipeline.fit``, the dashboard (including "add the twin to a fitted model") and the
benchmarks all go through these steps, so none of them rebuilds the recipe:

1. `prepare_fit` — split (or take a given split), resolve the task, fit the scaler,
   build the normalised episodes and the usable series of each role;
2. `train_levy_model` / `train_twin_model` — train a model on the fitting series, the epoch
   picked on the early-stopping series;
3. `assemble` — the [`FittedModel`][levy_core.pipeline.modelfile.FittedModel] with its last-value baseline, calibrated on
   the calibration split ([`calibrate`][levy_core.pipeline.recipe.calibrate]).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from levy_core.calibration.calibrate import Calibrator
from levy_core.calibration.horizon_scale import fit_horizon_scale
from levy_core.calibration.learned_spread import LearnedSpread
from levy_core.calibration.over_time import fit_adaptive, origin_gamma
from levy_core.calibration.query_scale import CONTEXT_COLUMNS, QueryScale, fit_query_scale
from levy_core.data import DataError, Observations
from levy_core.data.clock import user_time_unit
from levy_core.data.drift import DriftReference, reference_from
from levy_core.data.recorded import RecordedReading
from levy_core.episodes.baselines import LastValueForecaster
from levy_core.episodes.scaling import ChannelScaler
from levy_core.episodes.tasks import (
    MIN_SERIES_FOR_SERIES_SPLIT,
    EpisodeBuilder,
    Split,
    TaskConfig,
    make_origin_split,
    make_split,
    resolve_task,
    training_frame,
)
from levy_core.episodes.transforms import TransformSpec
from levy_core.model.config import ModelConfig
from levy_core.model.levy_model import LevyModel
from levy_core.model.sizes import AUTO_MEDIUM_MIN_SERIES, MODEL_SIZES
from levy_core.model.softmax_twin import SoftmaxTwin
from levy_core.offsets.base_forecast import BaseForecast, choose
from levy_core.offsets.candidates import best_observed
from levy_core.offsets.seasonality import detect_season, lag_one_autocorrelation, median_gap
from levy_core.offsets.spec import BaseForecastSpec
from levy_core.pipeline.calibrators import fit_calibrators, new_series_calibrators
from levy_core.pipeline.left_out import left_out_series
from levy_core.pipeline.modelfile import FittedModel
from levy_core.pipeline.predict import observed_queries
from levy_core.training.reversion import ReversionFit, fit_mean_reversion
from levy_core.training.reversion import install as install_reversion
from levy_core.training.train import (
    Progress,
    TrainConfig,
    TrainResult,
    fit_correction_scale,
    train_model,
)

__all__ = ["AUTO_MEDIUM_MIN_SERIES", "MODEL_SIZES", "FitData", "add_twin", "assemble", "calibrate", "cutoff_range", "drift_reference", "fit",
           "own_cutoffs_by_default",
           "prepare_fit", "resolve_size", "size_name", "train_levy_model", "train_twin_model"]


def resolve_size(size: str, n_series: int) -> str:
    """The preset a fit uses: ``size`` itself, or for ``"auto"`` ``"medium"`` on a file of at
    least ``AUTO_MEDIUM_MIN_SERIES`` series and ``"small"`` below. ValueError for an unknown name."""
    if size == "auto":
        return "medium" if n_series >= AUTO_MEDIUM_MIN_SERIES else "small"
    if size not in MODEL_SIZES:
        raise ValueError(f"size must be 'auto' or one of {sorted(MODEL_SIZES)}, got {size!r}")
    return size


def size_name(cfg: ModelConfig) -> str:
    """The preset ``cfg``'s widths match (``"custom"`` for none), e.g. to report a fit's size."""
    settings = cfg.to_dict()
    defaults = ModelConfig(n_channels=cfg.n_channels).to_dict()
    for name, preset in MODEL_SIZES.items():
        if all(settings.get(k) == preset.get(k, defaults.get(k)) for k in set(preset) | {"context_layers"}):
            return name
    return "custom"


@dataclass
class FitData:
    """Everything the training and calibration steps need, prepared once."""

    split: Split
    task: TaskConfig  # resolved (the forecast cut-off set)
    scaler: ChannelScaler
    channels: list[str]
    builder: EpisodeBuilder  # normalised episodes of every model-space series
    train_ids: list[str]  # the weights are fitted on these
    stop_ids: list[str]  # their loss picks the epoch
    calibration_ids: list[str]
    test_ids: list[str]
    time_scale: float  # hours: the median series span
    origin_of: dict[str, float] = field(default_factory=dict)  # origin mode: each episode's origin (user hours)
    season: float = 0.0  # hours of the model's seasonal offset (0: the last value)
    base_forecast: BaseForecastSpec | None = None  # origin mode: the classical forecaster of each offset
    left_out: dict[str, Any] | None = None  # forecast panels: the series the cut-off leaves out (left_out_series)

    def model_config(self, size: str = "small", phi: Literal["rate", "count"] = "rate",
                     **overrides: Any) -> ModelConfig:
        """The architecture of ``size`` for this data's channels and time scale."""
        if size not in MODEL_SIZES:
            raise ValueError(f"size must be one of {sorted(MODEL_SIZES)}, got {size!r}")
        settings = {"n_channels": len(self.channels), "time_scale": self.time_scale, "phi": phi,
                    "season": self.season, **MODEL_SIZES[size], **overrides}
        return ModelConfig(**settings)

    def counts(self) -> dict[str, int]:
        return {"train": len(self.train_ids), "stopping": len(self.builder.usable(self.split.stopping)),
                "calibration": len(self.calibration_ids), "test": len(self.test_ids)}


def prepare_fit(frame: pd.DataFrame, task: TaskConfig | None = None, *, seed: int = 0,
                split: Split | None = None, scaler: ChannelScaler | None = None,
                transform: TransformSpec = "auto", clock: str = "hours") -> FitData:
    """Step 1. ``frame``: the observations (columns series_id, channel, time, value); ``clock``:
    the data's (`user_time_unit`), in which a refusal says its durations.

    Without ``split``: a forecast of fewer than ``MIN_SERIES_FOR_SERIES_SPLIT`` series runs on
    rolling origins (`make_origin_split`); otherwise
    `make_split` decides (by series, or by time windows for an
    interpolation of few series). The scaler is fitted on the training series; a protocol with
    its own split (and scaler) passes them. ``transform``: each channel's value transform
    (`resolve_transforms`: ``"auto"``, on a panel split
    by series (none otherwise), takes the log of
    strictly positive skewed channels), ignored when ``scaler`` is given. ``DataError`` when a
    role has nothing to learn from or to calibrate on, or a forced transform cannot take a
    channel's values.
    """
    task = task or TaskConfig()
    origin_of: dict[str, float] = {}
    user_frame = None
    if split is None and task.kind == "forecast" and frame["series_id"].nunique() < MIN_SERIES_FOR_SERIES_SPLIT:
        user_frame = frame
        frame, split, task = make_origin_split(frame, task, seed=seed, clock=clock)  # few series: rolling origins
        origin_of = origin_times(split, user_frame)
    elif split is None:
        frame, split = make_split(frame, seed=seed)
    task = resolve_task(task, frame, by_series=split.mode == "series")
    if transform == "auto" and split.mode != "series":
        # "auto" is measured on panels (PBC: CRPS −6.5 to −10.4 %); one series or a few keep their
        # raw values, on which their classical offsets were chosen and benchmarked (a named
        # transform still applies)
        transform = "none"
    scaler = scaler or ChannelScaler.fit(frame, split.train, transform=transform)
    channels = sorted(frame["channel"].unique())
    builder = EpisodeBuilder(scaler.transform(frame), channels, task, seed=seed)
    train_ids, cal_ids = builder.usable(split.fitting()), builder.usable(split.calibration)
    # the epoch is picked on held-out training series, never on the calibration split; with
    # none usable, on the training loss itself
    stop_ids = builder.usable(split.stopping) or train_ids
    if not train_ids or not cal_ids:
        what = f"cut-off {task.cutoff_text()}" if task.kind == "forecast" else "the hold-out"
        raise DataError(f"with {what}, {len(train_ids)} training and {len(cal_ids)} calibration series have both "
                        "context and observations to predict; move the forecast cut-off, switch to "
                        "interpolation, or provide more observations")
    if split.mode == "origin":  # model time is relative to the origin: an episode's span
        plan = split.origin_plan or {}
        time_scale = float(plan["history"] + plan["horizon"])
    else:
        # the median span, not the latest time: a clock that starts before 0 (hours before
        # an event) or far after it must give the same model as the same data from 0
        times = frame.groupby("series_id")["time"]
        time_scale = float(max((times.max() - times.min()).median(), 1e-6))
    season, base = 0.0, None
    if split.mode == "origin" and user_frame is not None:
        # the offset is a classical forecaster chosen on the training and calibration origins
        # (it replaces the model's own seasonal offset)
        scored = list(dict.fromkeys(train_ids + stop_ids + cal_ids))
        base = choose_base_forecast(builder, scored, split, scaler, user_frame, origin_of, task.season)
        builder.base = BaseForecast(base, scaler.transform(user_frame), split.clock(user_frame).origins, channels)
    elif split.mode == "origin":
        season = resolve_season(task, split, user_frame, origin_of)
    return FitData(split, task, scaler, channels, builder, train_ids, stop_ids, cal_ids,
                   builder.usable(split.test), time_scale, origin_of, season, base, left_out_series(builder, split))


def choose_base_forecast(builder: EpisodeBuilder, ids: list[str], split: Split, scaler: ChannelScaler,
                         user_frame: pd.DataFrame, origin_of: dict[str, float],
                         season: float | None) -> BaseForecastSpec:
    """Rolling origins: the classical forecaster of each channel's offset, scored on the
    queries of the episodes ``ids`` (the training and calibration origins) that lie before
    the first test origin, from the observations before it: nothing a test origin forecasts
    is seen. The calibration origins are the latest before the test ones: a series whose
    regime changed (a recession, then a recovery) is forecast by what works since. The
    adaptive band these fits use holds without exchangeability, so the choice costs it
    nothing; ``season`` as asked (None: detected)."""
    first_test = origin_of[split.test[0]] if split.test else np.inf
    past = scaler.transform(user_frame[user_frame["time"] < first_test])
    names = {code: name for name, code in builder.channel_index.items()}
    episodes = {}
    for sid in ids:
        s = builder.series[sid]
        _, qry = builder.split_indices(sid)
        qry = qry[s.time[qry] + origin_of[sid] < first_test]
        if len(qry):
            episodes[sid] = pd.DataFrame({"channel": [names[c] for c in s.channel[qry]],
                                          "time": s.time[qry] + origin_of[sid], "value": s.value[qry]})
    origins = {sid: (s, o) for sid, (s, o) in split.clock(user_frame).origins.items()}
    return choose(past, origins, episodes, season=season)


def resolve_season(task: TaskConfig, split: Split, user_frame: pd.DataFrame | None,
                   origin_of: dict[str, float]) -> float:
    """Rolling origins: the season of the seasonal offset, in hours — the one asked for, or
    detected on the observations before the first calibration origin (never on what is
    calibrated or tested), up to two thirds of the history; 0 for none."""
    if task.season is not None:
        if not (np.isfinite(task.season) and task.season >= 0):
            raise ValueError(f"season must be a duration >= 0 (0: none), got {task.season}")
        return float(task.season)
    if user_frame is None or not split.calibration:
        return 0.0
    first_calibration = origin_of[split.calibration[0]]
    history = float((split.origin_plan or {})["history"])
    found = detect_season(user_frame[user_frame["time"] < first_calibration], max_period=2 * history / 3)
    return found or 0.0


def origin_times(split: Split, user_frame: pd.DataFrame) -> dict[str, float]:
    """Origin mode: each episode's forecast origin in the user's hours (empty otherwise)."""
    if split.mode != "origin":
        return {}
    return {m: o for m, (_, o) in split.clock(user_frame).origins.items()}


def walk_test_origins(fitted: FittedModel, builder: EpisodeBuilder, test_ids: list[str],
                      origin_of: dict[str, float], *, mc_passes: int = 0) -> None:
    """Origin mode: walk adaptive conformal inference over the test origins, oldest first,
    from each method's calibration scores (``levy_core.calibration.over_time``); the post-walk state
    goes in ``fitted.adaptive``, for bands beyond the end of the data."""
    if fitted.split.mode != "origin" or not test_ids or not origin_of:
        return
    frame = observed_queries(fitted, builder, test_ids, mc_passes=mc_passes if fitted.twin is not None else 0)
    origin = frame["series_id"].map(origin_of).to_numpy(np.float64)
    fitted.adaptive = fit_adaptive({"levy": fitted.levy_calibration, "mc": fitted.mc_calibration}, frame, origin,
                                   gamma=origin_gamma(fitted.split.origin_plan))
    fitted.adaptive_by_channel = True


def start_at_channel_means(model: LevyModel | SoftmaxTwin, data: FitData) -> LevyModel | SoftmaxTwin:
    """The offset of a channel a series has not observed yet: that channel's mean over the
    training series (a fixed buffer, not trained). From a constant 0.5 of the min-max range,
    trained, unseen stays that never observed a channel got pH 5.9 for 7.4 and a temperature
    of −13 °C (outliers stretch the range), then 3 °C once trained from the mean: only the
    few never-observed queries move it, at Adam's full step."""
    with torch.no_grad():
        model.backbone.default.copy_(torch.from_numpy(data.builder.channel_means(data.train_ids)))
    return model


def start_with_reversion(model: LevyModel | SoftmaxTwin, data: FitData) -> ReversionFit | None:
    """Panels: the last value's mean reversion per channel, fitted on the training series'
    episodes (`fit_mean_reversion`) and installed before
    training, so the network learns the correction to it. On rolling origins the offset is a
    classical forecaster's (``levy_core.offsets``) and nothing is fitted (None)."""
    if data.split.mode == "origin":
        return None
    fit = fit_mean_reversion(model.backbone, data.builder, data.train_ids)
    install_reversion(model.backbone, fit)
    return fit


def train_levy_model(data: FitData, cfg: ModelConfig, train: TrainConfig, *,
               progress: Callable[[Progress], None] | None = None) -> tuple[LevyModel, TrainResult]:
    """Step 2: the Lévy model, seeded by ``train.seed``."""
    torch.manual_seed(train.seed)
    model = start_at_channel_means(LevyModel(cfg), data)
    reversion = start_with_reversion(model, data)
    result = train_model(model, data.builder, data.train_ids, data.stop_ids, train, label="levy", progress=progress)
    result.reversion = reversion
    return model, keep_correction(model, data, result)


def train_twin_model(data: FitData, cfg: ModelConfig, train: TrainConfig, *,
               progress: Callable[[Progress], None] | None = None) -> tuple[SoftmaxTwin, TrainResult]:
    """Step 2: the softmax + dropout twin (MC-Dropout), same seed, episodes and budget."""
    torch.manual_seed(train.seed)
    model = start_at_channel_means(SoftmaxTwin(cfg), data)
    reversion = start_with_reversion(model, data)
    result = train_model(model, data.builder, data.train_ids, data.stop_ids, train, label="softmax",
                         progress=progress)
    result.reversion = reversion
    return model, keep_correction(model, data, result)


def correction_episodes(data: FitData) -> list[str]:
    """Where the share of the learned correction is fitted: the early-stopping episodes, and
    on rolling origins the calibration ones too. One series' stopping origins are a few
    neighbours at the end of the training period: a correction that held there (a drift of
    that period) may not hold later, and the calibration origins are the latest before the
    test ones. Rolling-origin bands hold through adaptive conformal inference, whose
    guarantee needs no exchangeability, so the choice costs them nothing; split conformal on
    many series keeps its calibration series untouched."""
    if data.split.mode != "origin":
        return data.stop_ids
    return data.stop_ids + [sid for sid in data.calibration_ids if sid not in set(data.stop_ids)]


def keep_correction(model: LevyModel | SoftmaxTwin, data: FitData, result: TrainResult) -> TrainResult:
    """Install the share of the learned correction each channel keeps
    ([`fit_correction_scale`][levy_core.training.train.fit_correction_scale], on `correction_episodes`), on
    rolling origins its bound too, and record them in ``result``. With a classical offset
    (one series or a few on rolling origins) the correction is measured but held back: the
    forecast is the offset and the network gives its band. On 35 held-out single series and
    two training seeds, the applied correction had cost 1.6 % CRPS on average
    (benchmarks/results/correction_held_back_2026-12-05.txt): trained on one series'
    overlapping windows it won on some and lost more on others, and no held-out check told
    which in advance."""
    fit = fit_correction_scale(model, data.builder, correction_episodes(data), cross_fit=data.split.mode == "origin",
                               hold_back=data.base_forecast is not None)
    model.correction_scale.copy_(torch.as_tensor(fit.scale))
    if data.split.mode == "origin":
        # one series' future leaves the range its past origins trained on (a trend, an
        # all-time high) and nothing held out validates a correction beyond B_c there; new
        # series of a panel are exchangeable with the held-out ones, and bounding them by
        # the largest correction of a few held-out series cost 10 % MSE on unseen stays
        model.correction_bound.copy_(torch.as_tensor(fit.bound))
    else:
        fit.bound = None
    result.correction = fit
    return result


def _training_summary(result: TrainResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    summary = {"best_epoch": result.best_epoch, "epochs_run": result.epochs_run,
               "seconds": round(result.seconds, 3), "best_val_mse": result.best_val_loss,
               "stopped_by": result.stopped_by,
               # per epoch: [epoch, training loss, early-stopping MSE] (the Fit panel's chart; None: not finite)
               "history": [[h["epoch"], *(round(float(h[k]), 7) if math.isfinite(h[k]) else None
                                          for k in ("train_loss", "val_loss"))] for h in result.history]}
    if result.correction is not None:
        summary.update(result.correction.to_dict())
    if result.reversion is not None:
        summary["reversion"] = result.reversion.to_dict()
    return summary


def assemble(data: FitData, cfg: ModelConfig, train: TrainConfig, levy: tuple[LevyModel, TrainResult | None],
             twin: tuple[SoftmaxTwin, TrainResult | None] | None = None, *, mc_passes: int = 20,
             data_hash: str = "", band_map: bool = False, learned_spread: bool = True) -> FittedModel:
    """Step 3: the fitted model with its last-value baseline, calibrated on the calibration
    split (``mc_passes`` MC-Dropout passes for the twin). ``band_map``: on a panel, size the band
    per query with the map ``s(q)`` (`band_map_split`, [`query_scale`][levy_core.calibration.query_scale]),
    fitted on the stopping series and half the calibration series, the band calibrated on the other
    half; off by default (docs/benchmarks/band-per-query.md). ``learned_spread``: on a forecast
    panel past its gate, size the band with [`learned_spread`][levy_core.calibration.learned_spread] (False: σ̂)."""
    fitted = FittedModel(levy[0], twin[0] if twin else None, cfg, data.task, train, data.split, data.scaler,
                         data.channels, Calibrator(), None, mc_passes=mc_passes, data_hash=data_hash,
                         last_value=LastValueForecaster.fit(data.builder, data.train_ids),
                         base_forecast=data.base_forecast)
    if data.split.mode == "origin":  # the band's spread per lead, before it is calibrated
        held = observed_queries(fitted, data.builder, correction_episodes(data))
        fitted.horizon_scale = fit_horizon_scale(held["time"], held["y_norm"], held["mean_norm"], held["sigma_norm"])
    calibration_ids, map_summary = data.calibration_ids, None
    if band_map and data.split.mode != "origin" and set(data.stop_ids).isdisjoint(data.train_ids):
        # panels: the spread per query, fitted on series never trained on and never calibrated on
        map_ids, conformal_ids = band_map_split(data)
        fitted.query_scale = fit_band_map(fitted, observed_queries(fitted, data.builder, map_ids))
        if fitted.query_scale is not None:
            calibration_ids = conformal_ids
            map_summary = {"fit_series": len(map_ids), "calibration_series": len(conformal_ids),
                        "fit_queries": fitted.query_scale.n_queries}
    elif learned_spread and data.split.mode == "series" and data.task.kind == "forecast":  # learned from its errors
        fit_ids = list(dict.fromkeys(data.train_ids + data.stop_ids))
        if LearnedSpread.within_reach(sum(len(data.builder.split_indices(s)[1]) for s in fit_ids)):  # else no pass
            fitted.learned_spread = LearnedSpread.from_frame(observed_queries(fitted, data.builder, fit_ids), data.channels)
    cal = calibrate(fitted, data.builder, calibration_ids, mc_passes=mc_passes)
    if data.split.mode == "series" and data.test_ids:
        # new series: the band calibrated on the calibration and test series together, both
        # held out from the weights and the epoch (split conformal with twice the series); the
        # held-out series themselves keep the calibration split's band (FittedModel.predictives)
        fitted.new_series_calibration = new_series_calibrators(fitted, data.builder, cal, data.test_ids,
                                                               mc_passes=mc_passes)
    walk_test_origins(fitted, data.builder, data.test_ids, data.origin_of, mc_passes=mc_passes)
    fitted.training = {"levy": _training_summary(levy[1]), "softmax": _training_summary(twin[1]) if twin else None,
                       "n_series": data.counts()}
    if data.left_out is not None:  # who the cut-off leaves out of every role (FittedModel.left_out_note)
        fitted.training["left_out"] = data.left_out
    if map_summary is not None:
        fitted.training["band_map"] = map_summary
    if data.base_forecast is not None and not data.base_forecast.harmonics and data.builder.base is not None:
        fitted.training["persistence"] = persistence(data.builder.base)
    return fitted


def band_map_split(data: FitData) -> tuple[list[str], list[str]]:
    """Where a panel's per-query spread map is fitted and where its band is then calibrated:
    the early-stopping series and every other calibration series fit the map, the remaining
    calibration series calibrate (scale and split conformal). The conformal series never
    touch the map, so split conformal's guarantee holds as it did for σ̂; with fewer than four
    calibration series every one of them calibrates and the map sees the stopping series alone."""
    if len(data.calibration_ids) < 4:
        return list(data.stop_ids), list(data.calibration_ids)
    return list(data.stop_ids) + data.calibration_ids[0::2], data.calibration_ids[1::2]


def fit_band_map(fitted: FittedModel, held: pd.DataFrame) -> QueryScale | None:
    """The per-query spread map ([`query_scale`][levy_core.calibration.query_scale]) on held-out
    queries ``held`` (`observed_queries` of series the calibration never sees)."""
    index = {c: i for i, c in enumerate(fitted.channels)}
    return fit_query_scale(held["channel"].map(index).to_numpy(), held["y_norm"].to_numpy(), held["mean_norm"].to_numpy(),
                           held["evidence_term"].to_numpy(), held["disagreement_term_norm"].to_numpy(),
                           {k: held[k].to_numpy() for k in CONTEXT_COLUMNS}, n_channels=len(fitted.channels), series=held["series_id"].to_numpy())


def persistence(base: BaseForecast) -> dict[str, float]:
    """Per channel, the lag-one autocorrelation of its best-observed series on its own
    sampling grid (`lag_one_autocorrelation`, in [0, 0.99]):
    near 1, the series carries its past forward like a random walk, where a band calibrated on
    the latest origins has covered less and less with the lead (``FittedModel.band_note``)."""
    return {channel: round(lag_one_autocorrelation(p.t, p.y, median_gap(p.t) or 1.0), 4)
            for channel, p in sorted(best_observed(base.past).items()) if len(p.t) >= 3}


def calibrate(fitted: FittedModel, builder: EpisodeBuilder, ids: list[str], *, mc_passes: int = 20) -> pd.DataFrame:
    """Fit the Lévy calibration (scale ``c``, then split conformal per channel) on the
    observed queries of the episodes ``ids`` and, when there is a twin, the same two steps
    for MC-Dropout, and for the last-value baseline. Returns the calibration queries'
    predictions (normalised units)."""
    cal, calibrators = fit_calibrators(fitted, builder, ids, mc_passes=mc_passes)
    fitted.levy_calibration = calibrators["levy"]
    fitted.mc_calibration = calibrators.get("mc", fitted.mc_calibration)
    fitted.last_value_calibration = calibrators.get("last_value", fitted.last_value_calibration)
    fitted.mc_passes = mc_passes
    return cal


def fit(obs: Observations, *, task: TaskConfig | None = None, train: TrainConfig | None = None,
        size: str = "auto", train_twin: bool = True, mc_passes: int = 20,
        phi: Literal["rate", "count"] = "rate",
        progress: Callable[[Progress], None] | None = None,
        preview: Callable[[Progress, Callable[[], FittedModel]], None] | None = None,
        transform: TransformSpec = "auto", band_map: bool = False) -> FittedModel:
    """Split, normalise, train the Lévy model (and its twin), calibrate both.

    Parameters
    ----------
    obs : Observations
    task : TaskConfig, optional
        Default: forecast with the cut-off at the median series midpoint.
    train : TrainConfig, optional
    size : {"auto", "small", "medium", "large"}
        ``"auto"``: medium on a file of at least ``AUTO_MEDIUM_MIN_SERIES`` series, small below
        ([`resolve_size`][levy_core.pipeline.recipe.resolve_size]).
    train_twin : bool
        Also train the softmax+dropout twin (needed for MC-Dropout and the softmax baseline).
    mc_passes : int
        T for MC-Dropout when calibrating the twin.
    progress : callable, optional
        Called with a ``Progress`` after every epoch of each model.
    preview : callable, optional
        Called after every epoch of the Lévy model with its ``Progress`` and a function that
        builds the model as it stands (the best epoch so far, calibrated, no twin:
        `preview_model`); calling it or not leaves the fit bit for bit the same.
    transform : str or mapping of str to str
        ``"auto"`` (log for strictly positive skewed channels, log1p for non-negative skewed
        ones with zeros: `levy_core.episodes.transforms`), ``"none"``, ``"log"``,
        ``"log1p"``, or channel -> kind; the fitted kinds are ``fitted.scaler.transforms``.
    band_map : bool
        On a panel, size the band per query with the map ``s(q)`` (`assemble`); off by
        default (measured, not shipped).
    """
    train = train or TrainConfig()
    if train_twin and mc_passes < 2:
        raise ValueError(f"mc_passes must be at least 2 to calibrate MC-Dropout, got {mc_passes}")
    size = resolve_size(size, obs.n_series)
    data = prepare_fit(obs.frame, task, seed=train.seed, transform=transform, clock=user_time_unit(obs))
    cfg = data.model_config(size, phi)

    def on_epoch(p: Progress) -> None:
        if progress is not None:
            progress(p)
        if preview is not None and p.model == "levy" and p.best_state is not None:
            preview(p, lambda: preview_model(obs, data, cfg, train, p))

    levy = train_levy_model(data, cfg, train, progress=on_epoch if preview is not None else progress)
    twin = train_twin_model(data, cfg, train, progress=progress) if train_twin else None
    fitted = assemble(data, cfg, train, levy, twin, mc_passes=mc_passes, data_hash=obs.content_hash(),
                      band_map=band_map)
    fitted.drift = drift_reference(obs, data.split)
    fitted.reading = RecordedReading.found(obs)  # the CLI and LevyForecaster record what was named as well
    return fitted


def preview_model(obs: Observations, data: FitData, cfg: ModelConfig, train: TrainConfig,
                  p: Progress) -> FittedModel:
    """The Lévy model as training left it at ``p`` (its best epoch so far), with its share
    of the correction and its calibration fitted as at the end of a fit, and no twin: a band
    to draw while training goes on. Torch's random state is saved and restored around it,
    so the fit it is taken from goes on exactly as without it."""
    if p.best_state is None:
        raise ValueError("preview_model needs a Progress with best_state (from train_model)")
    with torch.random.fork_rng(devices=[]):
        model = LevyModel(cfg)
        model.load_state_dict(p.best_state)
        result = keep_correction(model.eval(), data, TrainResult(p.best_epoch, p.best_val_loss, p.epoch, p.seconds))
        fitted = assemble(data, cfg, train, (model, result), None, mc_passes=2, data_hash=obs.content_hash())
    fitted.drift = drift_reference(obs, data.split)
    return fitted


def drift_reference(obs: Observations, split: Split) -> DriftReference:
    """The per-channel statistics new data are checked against (``levy_core.data.drift``), in
    the user's units and clock: of the training split's series in a many-series fit (as the
    scaler), of every series in a few-series fit (each is split in time, not by series)."""
    frame = obs.frame
    if split.mode == "series":
        frame = frame[frame["series_id"].isin(set(split.train))]
    return reference_from(frame)


def add_twin(fitted: FittedModel, obs: Observations, *, mc_passes: int = 20,
             progress: Callable[[Progress], None] | None = None) -> FittedModel:
    """A copy of ``fitted`` (fitted without its twin, on ``obs``) with the MC-Dropout twin
    trained and calibrated exactly as ``fit(..., train_twin=True)`` would have: same split,
    episodes, seed and budget; the Lévy model and its calibration are unchanged."""
    if mc_passes < 2:
        raise ValueError(f"mc_passes must be at least 2 to calibrate MC-Dropout, got {mc_passes}")
    frame = training_frame(fitted.split, obs.frame)
    data = prepare_fit(frame, fitted.task, seed=fitted.train_config.seed, split=fitted.split, scaler=fitted.scaler)
    if fitted.base_forecast is not None:  # the same offsets as the Lévy model was trained on
        data.builder.base = BaseForecast(fitted.base_forecast, fitted.scaler.transform(obs.frame),
                                         fitted.split.clock(obs.frame).origins, fitted.channels)
    twin, result = train_twin_model(data, fitted.model_config, fitted.train_config, progress=progress)
    new = dataclasses.replace(fitted, twin=twin, training=dict(fitted.training))
    cal = observed_queries(new, data.builder, data.calibration_ids, mc_passes=mc_passes)
    new.mc_calibration = Calibrator().fit(cal["y_norm"], cal["mc_mean_norm"], cal["mc_std_norm"],
                                          groups=cal["channel"].to_numpy())
    new.mc_passes = mc_passes
    if fitted.new_series_calibration is not None:  # as fit: new series' MC band on calibration and test series
        mc = new_series_calibrators(new, data.builder, cal, data.test_ids, mc_passes=mc_passes, keys=("mc",))
        new.new_series_calibration = {**fitted.new_series_calibration, **mc}
    new.training["softmax"] = _training_summary(result)
    walk_test_origins(new, data.builder, data.test_ids, origin_times(fitted.split, obs.frame), mc_passes=mc_passes)
    return new


def cutoff_range(obs: Observations, seed: int = 0) -> tuple[float, float, float]:
    """(earliest, latest, default) forecast cut-off in the model's time (window-relative in
    few-series mode), for a cut-off picker."""
    frame, _ = make_split(obs.frame, seed=seed)
    default = resolve_task(TaskConfig("forecast"), frame).cutoff
    spans = frame.groupby("series_id")["time"].max()
    return float(frame["time"].min()), float(spans.max()), float(np.float64(default))


def own_cutoffs_by_default(obs: Observations, seed: int = 0) -> bool:
    """Whether a forecast fit of ``obs`` without a cut-off gives each series its own (at the
    midpoint of its span: a panel on which one common cut-off would leave series out that
    their own keep in), for a cut-off picker."""
    frame, split = make_split(obs.frame, seed=seed)
    return split.mode == "series" and resolve_task(TaskConfig("forecast"), frame, by_series=True).per_series
