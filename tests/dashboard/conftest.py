"""Dashboard tests: tiny fits and clean Streamlit caches for every test."""

from __future__ import annotations

import functools

import pytest
import streamlit as st
from levy_dashboard import fit_pool
from streamlit.components.v2 import manifest_scanner

# Every AppTest scans the metadata of every installed distribution for Streamlit components
# (0.36 s each, 11 s of tests/dashboard/test_app.py's 77 s, 2026-12-03); the installed
# packages do not change during a test run, so the scan is made once per process. The app
# uses no such component: the scan finds none either way.
manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


@pytest.fixture(autouse=True)
def _fast_and_clean(monkeypatch: pytest.MonkeyPatch):
    """Few-epoch default fits, no start-up file, and empty Streamlit caches (they are
    process-wide: one test's model must not leak into the next). The app's fit pool, started
    by the first test that fits, runs at the tests' own priority: at its default, the lowest
    (``FIT_NICE`` = 19, what a server wants beside its views), a test waiting on a pooled fit
    waited for every other job on the machine (13 s instead of 5 for one failed fit under a
    load of 3); ``test_fit_pool.py`` tests the priority itself."""
    monkeypatch.setenv("LEVY_DASHBOARD_FAST", "1")
    monkeypatch.setenv(fit_pool.ENV_NICE, "0")
    monkeypatch.delenv("LEVY_DASHBOARD_DATA", raising=False)
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    st.cache_resource.clear()
    st.cache_data.clear()
