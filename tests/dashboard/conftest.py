"""Dashboard tests: tiny fits, and Streamlit caches kept warm from test to test.

The services' caches (``st.cache_data``, ``st.cache_resource``, the fit store) are
process-wide, as on a server, where every session finds what an earlier one computed. They
stay warm across these tests in the same way: each AppTest no longer reads the data again,
reopens the shipped model, recomputes its bands and evaluation. Clearing them before and
after every test cost 10-18 s of ``tests/dashboard`` (``-n 2 --dist loadgroup``, not slow, 121
tests, 2026-12-03, back to back: at load 0.7-1.1, 84.0 and 81.7 s of wall, 74.7 and 73.5 s
summed, against 97.9 s, 89.3 s with the clears; at load 2.1-3.4, 97.9 and 95.6 s, 80.8 and
77.6 s summed, against 106.0 and 114.1 s, 91.0 and 96.1 s). A warm AppTest start takes
0.3 s (5.6 s cold, the imports included); what is left is the fits and each view's first
computation, paid once per process. That is only sound when every key names exactly what
its result was computed from (the data's key: its frame and how it was read, the clock
among it; the fit key: that and the settings; nothing of one session's in a cached value:
a session's file name is its own, ``dash_helpers.session_model``), as on a server: a test
that computes on doctored inputs (a monkeypatched ``ModelData.points``) uses a key of its
own, and a test that counts calls or needs a cold cache asks for ``fresh_caches``. Run in
reversed and shuffled orders (explicit node ids), the tests pass alike.
"""

from __future__ import annotations

import functools

import pytest
import streamlit as st
from levy_dashboard.fitting import fit_pool
from streamlit.components.v2 import manifest_scanner

# Every AppTest scans the metadata of every installed distribution for Streamlit components
# (0.36 s each, 11 s of tests/dashboard/test_app.py's 77 s, 2026-12-03); the installed
# packages do not change during a test run, so the scan is made once per process. The app
# uses no such component: the scan finds none either way.
manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


def clear_caches() -> None:
    """Empty every Streamlit cache of this process, the fit store among them (``fits._fit_store``
    is an ``st.cache_resource``). The fit pool's jobs are left: a finished job is only ever
    collected under its own fit key."""
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def fresh_caches() -> None:
    """Cold caches for this test: for tests that count the calls a cache saves, or time a
    first computation. Cleared before the test only (what it leaves is keyed correctly)."""
    clear_caches()


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """Few-epoch default fits and no start-up file. The app's fit pool, started by the first
    test that fits, runs at the tests' own priority: at its default, the lowest (``FIT_NICE`` =
    19, what a server wants beside its views), a test waiting on a pooled fit waited for every
    other job on the machine (13 s instead of 5 for one failed fit under a load of 3);
    ``test_fit_pool.py`` tests the priority itself."""
    monkeypatch.setenv("LEVY_DASHBOARD_FAST", "1")
    monkeypatch.setenv(fit_pool.ENV_NICE, "0")
    monkeypatch.delenv("LEVY_DASHBOARD_DATA", raising=False)
