"""Drift, per channel (``levy_core.data.drift``): each rule flags what it should and nothing else;
the fit records the statistics, the model file keeps them (older models still load), an
unknown channel is refused by name, and the CLI says each flag as ``warning: …``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core.cli.main import main
from levy_core.data import DataError, Observations, from_frame
from levy_core.data.drift import (
    DENSITY_FACTOR,
    FLAG_COLUMNS,
    MIN_VALUES,
    NOT_RECORDED,
    VALUE_SHARE,
    DriftTally,
    check_drift,
    reference_from,
)
from levy_core.pipeline.modelfile import ModelLoadError, load_model
from levy_core.pipeline.prepared import prepare
from levy_core.pipeline.recipe import drift_reference
from levy_core.pipeline.user_frames import drift_report


@pytest.fixture(scope="module")
def reference(synthetic_obs: Observations):
    """What a fit on the first 24 series of the synthetic sample records."""
    return reference_from(synthetic_obs.subset(synthetic_obs.series_ids[:24]).frame)


@pytest.fixture(scope="module")
def fresh(synthetic_obs: Observations) -> pd.DataFrame:
    """16 other series of the same data-generating process."""
    return synthetic_obs.subset(synthetic_obs.series_ids[24:]).frame


def ranges(reference, frame: pd.DataFrame) -> pd.Series:
    return frame["channel"].map({c: r.maximum - r.minimum for c, r in reference.channels.items()})


def test_data_like_the_training_data_is_not_flagged(reference, fresh) -> None:
    report = check_drift(reference, from_frame(fresh))
    assert report.checked and list(report.flags.columns) == FLAG_COLUMNS
    assert report.flags.empty and report.messages == []


@pytest.mark.parametrize(("sign", "kind"), [(3, "values above the range"), (-3, "values below the range")])
def test_shifted_values_are_flagged_per_channel(reference, fresh, sign: int, kind: str) -> None:
    shifted = fresh.assign(value=fresh["value"] + sign * ranges(reference, fresh))
    flags = check_drift(reference, from_frame(shifted)).flags
    assert sorted(flags["channel"]) == sorted(reference.channels) and set(flags["kind"]) == {kind}
    for row in flags.itertuples():
        assert repr(row.channel) in row.message and "16 of 16 new series" in row.message
        assert (row.new > row.training) == (sign > 0)


def test_a_few_unusual_series_are_not_drift_but_many_are(reference, fresh) -> None:
    """Series are the unit: shifting one series in ten is not flagged, three in ten are."""
    ids = sorted(fresh["series_id"].unique())[:10]
    base = fresh[fresh["series_id"].isin(ids)]
    for n_shifted, flagged in ((1, False), (3, True)):
        assert (n_shifted / 10 > VALUE_SHARE) == flagged
        moved = base["series_id"].isin(ids[:n_shifted])
        frame = base.assign(value=base["value"] + moved * 3 * ranges(reference, base))
        flags = check_drift(reference, from_frame(frame)).flags
        assert (not flags.empty) == flagged, flags


def test_values_just_past_the_range_are_not_far(reference, fresh) -> None:
    """Beyond the training maximum by 5 % of the range: within the margin, not flagged."""
    top = fresh["channel"].map({c: r.maximum for c, r in reference.channels.items()})
    at_edge = fresh.assign(value=top + 0.05 * ranges(reference, fresh))
    assert check_drift(reference, from_frame(at_edge)).flags.empty


def test_thinned_data_is_flagged_sparser(reference, fresh) -> None:
    thin = fresh.sample(frac=1 / 8, random_state=0)
    flags = check_drift(reference, from_frame(thin)).flags
    assert sorted(flags["channel"]) == sorted(reference.channels) and set(flags["kind"]) == {"sparser"}
    assert ((flags["training"] / flags["new"]) >= DENSITY_FACTOR).all()
    assert all("sparser than in training" in m and "median gap" in m for m in flags["message"])


def test_compressed_time_is_flagged_denser(reference, fresh) -> None:
    dense = fresh.assign(time=fresh["time"] / 8)
    flags = check_drift(reference, from_frame(dense)).flags
    assert set(flags["kind"]) == {"denser"} and len(flags) == len(reference.channels)


def test_half_the_observations_is_not_far_sparser(reference, fresh) -> None:
    half = fresh.sample(frac=0.5, random_state=0)
    assert check_drift(reference, from_frame(half)).flags.empty


@pytest.mark.parametrize("n_chunks", [1, 3, 16])
def test_chunks_of_whole_series_give_the_whole_files_flags(reference, fresh, n_chunks: int) -> None:
    """``levy rank`` / ``levy predict`` on big files tally chunk by chunk: the same flags and
    figures as the whole data at once (half the series shifted, every series thinned)."""
    ids = sorted(fresh["series_id"].unique())
    shifted = fresh["series_id"].isin(ids[::2])
    data = fresh.assign(value=np.where(shifted, fresh["value"] + 3 * ranges(reference, fresh), fresh["value"]))
    data = data[np.arange(len(data)) % 8 == 0]
    whole = check_drift(reference, from_frame(data)).flags
    tally = DriftTally(reference)
    for part in np.array_split(np.array(ids), n_chunks):
        tally.add(from_frame(data[data["series_id"].isin(part)]))
    chunked = tally.report().flags
    assert not whole.empty and set(whole["kind"]) >= {"values above the range", "sparser"}
    figures = ["channel", "kind", "figure", "training", "new"]
    pd.testing.assert_frame_equal(chunked[figures], whole[figures])
    values = whole["kind"].str.startswith("values")
    assert chunked.loc[values, "message"].tolist() == whole.loc[values, "message"].tolist()
    tally.clear()
    assert tally.report().flags.empty


def test_channels_with_few_training_values_are_not_checked(fresh) -> None:
    few = fresh.groupby("channel").head(MIN_VALUES - 1)
    shifted = fresh.assign(value=fresh["value"] + 1e3)
    assert check_drift(reference_from(few), from_frame(shifted)).flags.empty


def test_unknown_channels_are_refused_by_name(fitted, fit_obs: Observations) -> None:
    frame = fit_obs.frame.copy()
    frame.loc[frame.index[:10], "channel"] = "lactate"
    frame.loc[frame.index[10:20], "channel"] = "Temp"
    with pytest.raises(DataError) as err:
        prepare(fitted, from_frame(frame))
    message = str(err.value)
    assert "'Temp', 'lactate'" in message and "never trained on" in message
    assert all(repr(c) in message for c in fitted.channels), "names the channels the model knows"


def test_the_fit_records_the_training_series_statistics(fitted, fit_obs: Observations) -> None:
    assert fitted.drift is not None and set(fitted.drift.channels) == set(fitted.channels)
    train = fit_obs.subset(fitted.split.train).frame
    assert fitted.drift == drift_reference(fit_obs, fitted.split) == reference_from(train)
    for channel, ref in fitted.drift.channels.items():
        values = train.loc[train["channel"] == channel, "value"]
        assert (ref.n_values, ref.minimum, ref.maximum) == (len(values), values.min(), values.max())


def test_the_model_file_keeps_them(fitted, fitted_dir: Path) -> None:
    assert load_model(fitted_dir).drift == fitted.drift


def without_drift(fitted_dir: Path, tmp_path: Path) -> Path:
    """The shared model as a version before drift statistics wrote it: no "drift" key."""
    old = Path(shutil.copytree(fitted_dir, tmp_path / "old"))
    meta = json.loads((old / "model.json").read_text())
    del meta["drift"]
    (old / "model.json").write_text(json.dumps(meta))
    return old


def test_a_model_saved_before_drift_statistics_loads_and_says_not_checked(fitted_dir, fit_obs, tmp_path) -> None:
    old = load_model(without_drift(fitted_dir, tmp_path))
    report = drift_report(old, fit_obs)
    assert old.drift is None and not report.checked and report.flags.empty
    assert report.messages == [NOT_RECORDED] and "predates drift statistics" in NOT_RECORDED


@pytest.mark.parametrize("damage", ["stray channel", "nan", "inverted range", "not an object"])
def test_damaged_drift_statistics_are_refused(fitted_dir: Path, tmp_path: Path, damage: str) -> None:
    broken = Path(shutil.copytree(fitted_dir, tmp_path / "broken"))
    meta = json.loads((broken / "model.json").read_text())
    channels = meta["drift"]["channels"]
    first = next(iter(channels))
    if damage == "stray channel":
        channels["lactate"] = channels[first]
    elif damage == "nan":
        channels[first]["maximum"] = float("nan")
    elif damage == "inverted range":
        channels[first]["minimum"] = channels[first]["maximum"] + 1
    else:
        meta["drift"] = [1, 2]
    (broken / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="drift statistics|not a finite number"):
        load_model(broken)


def run(capsys, *argv: object) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


@pytest.fixture()
def shifted_csv(fit_obs: Observations, fitted, tmp_path: Path) -> Path:
    frame = fit_obs.frame
    width = frame["channel"].map({c: r.maximum - r.minimum for c, r in fitted.drift.channels.items()})
    path = tmp_path / "shifted.csv"
    frame.assign(value=frame["value"] + 3 * width).to_csv(path, index=False)
    return path


@pytest.mark.integration
def test_cli_warns_on_drift_in_predict_evaluate_and_rank(capsys, fitted, fitted_dir, shifted_csv, tmp_path) -> None:
    commands = {"predict": ("--out", tmp_path / "p.csv", "--points", 2),
                "evaluate": ("--json", tmp_path / "e.json", "--mc-passes", 2),
                "rank": ("--out", tmp_path / "r.csv"),
                # a big file, read a few series at a time: the whole file's flags, said once
                "rank ": ("--out", tmp_path / "r2.csv", "--chunk-series", 3),
                "predict ": ("--out", tmp_path / "p2.csv", "--points", 2, "--chunk-series", 3)}
    for command, options in commands.items():
        code, err = run(capsys, command.strip(), fitted_dir, shifted_csv, *options)
        assert code == 0, err
        warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
        assert len(warnings) == len(fitted.channels), (command, err)
        assert all("far above the training range" in w for w in warnings)


def test_cli_output_without_drift_has_no_warning(capsys, fitted_dir, fit_csv, tmp_path) -> None:
    code, err = run(capsys, "predict", fitted_dir, fit_csv, "--out", tmp_path / "p.csv", "--points", 2)
    assert code == 0 and "warning:" not in err and "note: drift" not in err


def test_cli_says_drift_was_not_checked_for_an_old_model(capsys, fitted_dir, fit_csv, tmp_path) -> None:
    code, err = run(capsys, "rank", without_drift(fitted_dir, tmp_path), fit_csv, "--out", tmp_path / "r.csv")
    assert code == 0 and f"note: drift {NOT_RECORDED}" in err


def test_drift_statistics_are_in_the_data_units(fitted) -> None:
    """Not the model's min-max scale: the training minimum and maximum are the scaler's."""
    for channel, ref in fitted.drift.channels.items():
        assert np.isclose(ref.minimum, fitted.scaler.minimum[channel])
        assert np.isclose(ref.maximum, fitted.scaler.maximum[channel])


def test_sampling_flags_speak_the_datas_clock(reference, fresh) -> None:
    """The same thinned data read in days: the rates per day and the gaps in days (the
    reference's hours are the same hours, said in the data's unit); hours say hours."""
    thin = fresh.sample(frac=1 / 8, random_state=0)
    hours = check_drift(reference, from_frame(thin)).flags
    assert all("observations per hour" in m and " hours" in m for m in hours["message"])
    days = check_drift(reference, from_frame(thin.assign(time=thin["time"] / 24.0), time_unit="days")).flags
    assert not days.empty and set(days["figure"]) == {"observations per day of series span"}
    assert all("observations per day" in m and " days" in m and " hours" not in m for m in days["message"])
    np.testing.assert_allclose(days["training"].to_numpy(), hours["training"].to_numpy() * 24.0)
