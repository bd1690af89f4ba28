"""Dashboard tests: tiny fits and clean Streamlit caches for every test."""

from __future__ import annotations

import pytest
import streamlit as st


@pytest.fixture(autouse=True)
def _fast_and_clean(monkeypatch: pytest.MonkeyPatch):
    """Few-epoch default fits, no start-up file, and empty Streamlit caches (they are
    process-wide: one test's model must not leak into the next)."""
    monkeypatch.setenv("LEVY_DASHBOARD_FAST", "1")
    monkeypatch.delenv("LEVY_DASHBOARD_DATA", raising=False)
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    st.cache_resource.clear()
    st.cache_data.clear()
