"""The test tiers (tests/conftest.py): a test that starts another process or runs the
dashboard's whole script fails unless it is marked ``integration`` (or ``slow``, ``e2e``), so
``make test-fast`` keeps to tests of one unit in its own process."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys

import pytest

try:  # imported at collection, as the dashboard's tests import it (the guard patches what is loaded)
    from streamlit.testing.v1 import AppTest
except ImportError:  # the library installed without the dashboard's extra
    AppTest = None


def test_an_unmarked_test_may_not_start_a_process() -> None:
    with pytest.raises(AssertionError, match="mark it @pytest.mark.integration"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    with pytest.raises(AssertionError, match="mark it @pytest.mark.integration"):
        multiprocessing.get_context("spawn").Process(target=print).start()


@pytest.mark.integration
def test_a_marked_test_may() -> None:
    assert subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True,
                          check=True).stdout.strip() == "42"


def test_an_unmarked_test_may_not_run_the_whole_app() -> None:
    if AppTest is None:
        pytest.skip("streamlit is not installed (the dashboard's extra)")
    app = AppTest.from_string("import streamlit as st\nst.write('hi')")
    with pytest.raises(AssertionError, match="runs the dashboard's whole script"):
        app.run()
