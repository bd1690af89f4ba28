"""``controller``: the keys under which a session's pooled fit is drawn name the very model
drawn (the views' caches are process-wide: a key reused for another model hands its results
to whoever draws the other one)."""

from __future__ import annotations

import pytest
import streamlit as st
from levy_dashboard import services
from levy_dashboard.fitting.fit_pool import JobView
from levy_dashboard.session import controller, state


def _follow(monkeypatch: pytest.MonkeyPatch, preview_zip: bytes) -> str:
    """The key ``controller.collect_job`` draws a running job's first preview under, its pool
    answering with ``preview_zip`` (no model is loaded: ``preview_result`` is recorded)."""
    keys: list[str] = []
    view = JobView("fit-key", "running", 0, 1, {"epoch": 2}, [], 1, False, None, 1.0)
    monkeypatch.setattr(services.fit, "job_view", lambda key: view)
    monkeypatch.setattr(services.fit, "job_models", lambda key: (preview_zip, {"epoch": 2}, None, None))
    monkeypatch.setattr(services.fit, "preview_result", lambda key, *a: keys.append(key) or key)
    ss = st.session_state
    ss[state.JOB] = {"key": "fit-key", "kind": "fit", "obs": None, "obs_hash": "h", "label": "upload: x.csv",
                     "settings": None, "new_data": False, "levy": False, "seq": 0, "final": "fit-key",
                     "levy_key": "fit-key", "failure_key": "fit-key"}
    ss.pop(state.PREVIEW, None)
    try:
        assert controller.collect_job([]) == keys[0]
    finally:
        for key in (state.JOB, state.PREVIEW):
            ss.pop(key, None)
    return keys[0]


def test_a_preview_is_keyed_by_its_model_not_by_its_number(monkeypatch: pytest.MonkeyPatch) -> None:
    """Previews are numbered per job and sent every few seconds (not at set epochs): a fit of
    the same key run again (retried after a failure, or fitted again once the store and the
    pool forgot it) numbers its previews from 1 again, of other models. Keyed by their number,
    the second run's first preview drew the band, evidence and tables cached for the first's."""
    first, again = _follow(monkeypatch, b"model after epoch 2"), _follow(monkeypatch, b"model after epoch 3")
    assert first != again, "two models under one key"
    assert _follow(monkeypatch, b"model after epoch 2") == first, "the same model: its cached views are reused"
    assert first.startswith("fit-key~preview-")
