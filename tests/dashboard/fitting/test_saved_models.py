"""Saved models in the dashboard (``AppTest``): a fitted model is downloaded as a zip, opened
in a fresh session with every cache cleared (nothing can come from the shared store), and
applied to a new upload without refitting — band, evidence, trust ranking and the Monitoring
verdicts work on it; a tampered zip is refused with a message and nothing is lost; an opened
model is its session's own."""

from __future__ import annotations

import io
import json
import pickle
import zipfile

import pandas as pd
import pytest
import streamlit as st
from dash_helpers import SAMPLE_DIR, figure, show, start
from levy_dashboard import services
from levy_dashboard.fitting import fits
from streamlit.testing.v1 import AppTest

from levy_core.pipeline import recipe
from levy_core.pipeline.model_loading import MAX_MODEL_JSON_BYTES
from levy_core.serving.modelzip import load_model_zip


def upload(at: AppTest, name: str, data: bytes, key: str = "upload") -> AppTest:
    kind = "application/zip" if name.endswith(".zip") else "text/csv"
    at.file_uploader(key=key).set_value((name, data, kind))
    at.run()
    assert not at.exception, at.exception
    return at


def series_csv(first: int, last: int, *, before: float | None = None) -> bytes:
    """Series ``first..last-1`` of the synthetic sample (observations up to ``before`` h)."""
    df = pd.read_csv(SAMPLE_DIR / "synthetic_multichannel.csv", dtype={"series_id": str})
    keep = sorted(df["series_id"].unique())[first:last]
    df = df[df["series_id"].isin(keep)]
    return (df if before is None else df[df["time"] <= before]).to_csv(index=False).encode()


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buffer.getvalue()


def texts(at: AppTest) -> str:
    parts = [*at.markdown, *at.caption, *at.error, *at.warning, *at.success, *at.info,
             *at.sidebar.error, *at.sidebar.success]
    return " ".join(str(p.value) for p in parts).replace("\\", "").replace("\u2060", "")  # plain()'s escapes


@pytest.fixture(scope="module")
def saved() -> tuple[bytes, str]:
    """A model fitted in one session on series 0-15 and downloaded, and its fit key; every
    cache and the fit store are cleared afterwards. Made once for the module (the zip's bytes
    and a key: nothing a test can change), where each test made it again, 1-12 s each."""
    with pytest.MonkeyPatch.context() as mp:  # before the conftest's function-scoped env patch
        mp.setenv(fits.ENV_FAST, "1")
        mp.delenv("LEVY_DASHBOARD_DATA", raising=False)
        st.cache_resource.clear()
        st.cache_data.clear()
        return _saved()


def _saved() -> tuple[bytes, str]:
    at = upload(start(), "train.csv", series_csv(0, 16))
    at = show(at, "Fit")
    assert any("Download the fitted model" in str(b.proto.label) for b in at.get("download_button"))
    res = fits.cached_fit(at.session_state["_fit_key"])
    data = services.fit.model_zip(res.key, res)
    assert load_model_zip(data).channels == res.fitted.channels
    key = res.key
    st.cache_resource.clear()
    st.cache_data.clear()
    return data, key


@pytest.mark.integration
def test_a_saved_model_opens_in_a_fresh_session_and_scores_new_data_without_refitting(saved, monkeypatch) -> None:
    data, fit_key = saved
    at = start()  # a fresh session on the bundled sample (its default fit is the one fit allowed)
    trained = []
    monkeypatch.setattr(recipe, "fit", lambda *a, **k: trained.append(1))  # from here on, no fit here
    monkeypatch.setattr(services.fit, "submit_fit", lambda *a, **k: trained.append(2))  # ... nor in the server's pool
    at = upload(at, "icu_model.zip", data, key="model_upload")
    assert at.session_state["_opened_model"].name == "icu_model.zip"
    at = upload(at, "new_ward.csv", series_csv(24, 36))
    assert trained == [], "no fit: the saved model scores the new upload"
    res = at.session_state["_opened_result"]
    assert res.opened_from == "icu_model.zip" and not res.data.same_data and res.obs.n_series == 12
    assert res.key.startswith("opened-") and fits.cached_fit(res.key) is None, "never in the shared store"
    assert "opened from icu_model.zip" in texts(at) and "new_ward.csv" in texts(at)
    band = figure(at, "band_chart")
    assert any(t.get("name", "").startswith("Lévy") for t in band["data"])
    scatter = figure(at, "evidence_scatter")["data"]
    assert scatter, "evidence vs disagreement on the opened model"
    assert any(t.get("name") == "held-out queries (every new series)" for t in scatter), "new data: every series"
    at = show(at, "Trust ranking")
    ranked, _ = services.evaluation.ranking(res.key, res)
    assert sorted(ranked["series_id"]) == sorted(res.obs.series_ids)
    at = show(at, "Monitoring")
    monitor = services.monitoring.monitoring(res.key, res)
    assert monitor.observed and monitor.new_data and monitor.n_series == 12
    verdicts, channels = (d.value for d in at.dataframe if "drift" not in d.value.columns)  # per level, channel
    assert verdicts["band"].tolist() == ["50 %", "80 %", "90 %", "95 %"]
    assert set(verdicts["verdict"]) <= {"holds", "outside"}
    assert verdicts["verdict"].tolist() == ["holds" if v else "outside" for v in monitor.checks["holds_series"]]
    assert sorted(channels["channel"]) == sorted(res.fitted.channels)
    assert figure(at, "monitor_chart")["data"][0]["name"] == "Lévy"
    assert (at.success or at.warning), "the verdict, said plainly"
    assert trained == []


@pytest.mark.slow  # a forecast fit in the app
def test_data_with_no_observed_future_is_said_plainly(monkeypatch) -> None:
    at = upload(start(), "train.csv", series_csv(0, 16))
    at.radio(key="fit_task").set_value("forecast")
    at.button(key="fit_button").click().run()
    res = fits.cached_fit(at.session_state["_fit_key"])
    assert res.fitted.task.kind == "forecast"
    data = services.fit.model_zip(res.key, res)
    fresh = upload(start(), "model.zip", data, key="model_upload")
    fresh = upload(fresh, "so_far.csv", series_csv(24, 36, before=res.fitted.task.cutoff))
    fresh = show(fresh, "Monitoring")
    notes = [str(i.value).replace("\\", "") for i in fresh.info]
    assert any("Nothing to monitor yet" in n and "cut-off (24 hours)" in n for n in notes), notes
    assert not fresh.get("plotly_chart")


def pickle_inside(files: dict[str, bytes]) -> bytes:
    return zipped({**files, "levy.pkl": pickle.dumps({"w": 1})})


def escaping(files: dict[str, bytes]) -> bytes:
    return zipped({**files, "../../model.json": files["model.json"]})


def huge_json(files: dict[str, bytes]) -> bytes:
    return zipped({**files, "model.json": b" " * (MAX_MODEL_JSON_BYTES + 1)})


@pytest.mark.parametrize(("tamper", "message"), [
    (pickle_inside, "pickled files"),
    (escaping, "escapes the model's folder"),
    (huge_json, "would unpack to"),
    (lambda files: b"PK\x03\x04 not really a zip", "not a zip file or is corrupt"),
    (lambda files: zipped({**files, "model.json": json.dumps({"format": "levy-model/2"}).encode()}), "damaged"),
])
@pytest.mark.integration
def test_a_tampered_zip_is_refused_and_nothing_is_lost(saved, tamper, message) -> None:
    data, _ = saved
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        files = {n: z.read(n) for n in z.namelist()}
    at = start()
    fit_key = at.session_state["_fit_key"]
    at = upload(at, "model.zip", tamper(files), key="model_upload")
    errors = [str(e.value).replace("\\", "") for e in at.sidebar.error]
    assert any(message in e and "The current model is kept" in e for e in errors), errors
    assert "_opened_model" not in at.session_state
    assert at.session_state["_fit_key"] == fit_key and figure(at, "band_chart")["data"]
    # an opened model is kept, too, when a second zip is refused
    at = upload(at, "good.zip", data, key="model_upload")
    assert at.session_state["_opened_model"].name == "good.zip" and not at.sidebar.error
    at = upload(at, "evil.zip", tamper(files), key="model_upload")
    assert at.session_state["_opened_model"].name == "good.zip"
    assert any(message in str(e.value).replace("\\", "") for e in at.sidebar.error)


@pytest.mark.integration
def test_an_opened_model_is_its_sessions_own_and_closes_back_to_the_fit(saved) -> None:
    data, _ = saved
    mine = start()
    own_fit = mine.session_state["_fit_key"]
    mine = upload(mine, "private.zip", data, key="model_upload")
    other = start()
    assert "_opened_model" not in other.session_state and "private.zip" not in texts(other)
    assert fits.cached_fit(mine.session_state["_opened_result"].key) is None, "not in the shared store"
    mine.button(key="close_model").click().run()
    assert "_opened_model" not in mine.session_state
    assert mine.session_state["_fit_key"] == own_fit and "opened from" not in texts(mine)


@pytest.mark.integration
def test_new_data_with_a_channel_the_model_never_saw_is_refused_by_name(saved) -> None:
    data, _ = saved
    at = upload(start(), "model.zip", data, key="model_upload")
    before = at.session_state["_opened_result"]
    df = pd.read_csv(io.BytesIO(series_csv(24, 36)))
    df.loc[df.index[:50], "channel"] = "lactate"
    at = upload(at, "other.csv", df.to_csv(index=False).encode())
    assert any("lactate" in str(e.value) and "cannot score" in str(e.value) for e in at.error), [e.value for e in at.error]
    assert at.session_state["_opened_result"] is before, "the model stays open on the data it had"


@pytest.mark.integration
def test_monitoring_flags_drift_by_channel_and_says_when_there_is_none(saved) -> None:
    """Series like the training ones: no drift said plainly; the same series with one
    channel shifted by three training ranges: that channel is flagged, with the figures."""
    data, _ = saved
    at = show(upload(upload(start(), "model.zip", data, key="model_upload"), "like.csv", series_csv(24, 36)),
              "Monitoring")
    assert any("No drift flagged" in str(s.value) for s in at.success), texts(at)
    df = pd.read_csv(io.BytesIO(series_csv(24, 36)))
    channel = sorted(df["channel"].unique())[0]
    span = df.loc[df["channel"] == channel, "value"].agg(["min", "max"])
    df.loc[df["channel"] == channel, "value"] += 3 * float(span["max"] - span["min"])
    at = show(upload(at, "shifted.csv", df.to_csv(index=False).encode()), "Monitoring")
    assert any("drift flag" in str(w.value) for w in at.warning), texts(at)
    flags = next(d.value for d in at.dataframe if "drift" in d.value.columns)
    assert flags["channel"].tolist() == [channel] and flags["drift"].tolist() == ["values above the range"]


def odd_columns_csv(first: int, last: int) -> bytes:
    """Series ``first..last-1`` of the synthetic sample with columns no alias finds
    (``ward_bed, when_d, lab, result``) and times in days (the sample's hours / 24)."""
    df = pd.read_csv(SAMPLE_DIR / "synthetic_multichannel.csv", dtype={"series_id": str})
    keep = sorted(df["series_id"].unique())[first:last]
    df = df[df["series_id"].isin(keep)].assign(time=lambda d: d["time"] / 24.0)
    return df.rename(columns={"series_id": "ward_bed", "time": "when_d", "channel": "lab",
                              "value": "result"}).to_csv(index=False).encode()


def test_recorded_reading_keeps_the_mapping_only_where_the_file_has_its_columns() -> None:
    from levy_core.data.columns import ColumnMapping
    from levy_core.data.recorded import RecordedReading

    mapping = ColumnMapping(time="when_d", value="result", series="ward_bed", channel="lab")
    fitted = type("F", (), {"reading": RecordedReading(mapping=mapping, time_unit="days", clock="days")})()
    opened = services.fit.OpenedModel("m.zip", "0" * 64, fitted)
    assert services.fit.recorded_reading(opened, ["ward_bed", "when_d", "lab", "result"]) == (mapping, "days")
    assert services.fit.recorded_reading(opened, ["series_id", "time", "channel", "value"]) == (None, "days")
    fitted.reading = None  # a model saved before the record: the data are read as the user set them
    assert services.fit.recorded_reading(opened, ["when_d"]) is None


@pytest.mark.integration
def test_an_opened_model_reads_new_data_with_its_recorded_columns_and_clock(monkeypatch) -> None:
    """A model fitted on a file whose columns no alias finds, in days: opened in the
    dashboard, a new file of the same kind is read with the fit's columns and its clock
    (levy predict's rule), not refused for want of a time column nor read in hours."""
    import io as _io

    from levy_core.data import read_csv
    from levy_core.data.columns import ColumnMapping
    from levy_core.episodes.tasks import TaskConfig
    from levy_core.pipeline.recipe import fit
    from levy_core.serving.modelzip import model_zip_bytes
    from levy_core.training.train import TrainConfig

    mapping = ColumnMapping(time="when_d", value="result", series="ward_bed", channel="lab")
    obs = read_csv(_io.BytesIO(odd_columns_csv(0, 16)), mapping=mapping, time_unit="days")
    fitted = fit(obs, task=TaskConfig("interpolate"), train=TrainConfig(epochs=2, seed=0), train_twin=False)
    assert fitted.reading is not None and fitted.reading.time_unit == "days"
    at = start()
    monkeypatch.setattr(services.fit, "submit_fit", lambda *a, **k: pytest.fail("no fit: the model scores"))
    at = upload(at, "days_model.zip", model_zip_bytes(fitted), key="model_upload")
    assert "numeric times in days" in texts(at), "the sidebar says how new files are read"
    at = upload(at, "new_beds.csv", odd_columns_csv(24, 36))
    res = at.session_state["_opened_result"]
    assert res.opened_from == "days_model.zip" and res.obs.n_series == 12
    assert res.obs.report.input_time_unit == "days"
    raw = pd.read_csv(_io.BytesIO(odd_columns_csv(24, 36)))
    assert res.obs.frame["time"].max() == pytest.approx(raw["when_d"].max() * 24.0, rel=1e-9), "days, as hours"
