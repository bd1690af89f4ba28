"""Issue 52, messages: a refusal names the value the user gave; ``--level`` is read alike by
every subcommand; the API notes averaged duplicates as the CLI does; level labels are exact."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from cli_helpers import assert_clean_error, run

from levy_core import LevyForecaster
from levy_core.data import DataError


@pytest.mark.parametrize("alpha", ["1e-300", "1e-17", "5e-324"])
def test_watch_names_the_alpha_given(tmp_path, capsys, fitted_dir, fit_csv, alpha):
    code, out, err = run(capsys, "watch", fitted_dir, fit_csv, f"--alpha={alpha}", "--out", tmp_path / "w.csv")
    assert code == 2 and "Traceback" not in err
    assert alpha in err and "got 1.0" not in err, err


EXTREME = {  # how it is asked -> the value the message must name
    "h=1e308h": ({"h": "1e308h"}, "1e+308"),
    "h=1e300 (a number)": ({"h": 1e300}, "1e+300"),
    "a query at ds=1e300": ({"queries": pd.DataFrame({"unique_id": ["s00"], "ds": [1e300], "channel": ["smooth"]})},
                            "1e+300"),
}


@pytest.mark.parametrize("case", EXTREME)
def test_an_extreme_horizon_or_query_time_is_a_data_error_naming_it(fitted_dir, fit_obs, case):
    kwargs, named = EXTREME[case]
    f = LevyForecaster.load(fitted_dir)
    with pytest.raises(DataError) as exc:
        f.predict(df=fit_obs.frame, **kwargs)
    assert named in str(exc.value) and "check_finite" not in str(exc.value)


@pytest.mark.parametrize("command", ["predict", "advise"])
@pytest.mark.parametrize("level", ["90", "0.9"])
def test_every_subcommand_takes_level_alike(tmp_path, capsys, fitted_dir, fit_csv, command, level):
    extra = ["--series", "s00", "--horizon", "6h"] if command == "advise" else ["--horizon", "6h"]
    code, out, err = run(capsys, command, fitted_dir, fit_csv, "--level", level, *extra, "--out", tmp_path / "o.csv")
    assert code == 0, err


@pytest.mark.parametrize("command", ["predict", "advise"])
def test_every_subcommand_refuses_the_same_bad_level(tmp_path, capsys, fitted_dir, fit_csv, command):
    extra = ["--series", "s00", "--horizon", "6h"] if command == "advise" else ["--horizon", "6h"]
    code, out, err = run(capsys, command, fitted_dir, fit_csv, "--level", "5", *extra, "--out", tmp_path / "o.csv")
    assert_clean_error(code, out, err)
    assert "level 5 is neither a fraction" in err


def test_the_api_notes_duplicates_averaged(fitted_dir, fit_obs):
    frame = fit_obs.frame
    doubled = pd.concat([frame, frame.head(10)], ignore_index=True)
    f = LevyForecaster.load(fitted_dir)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f.predict(h="6h", points=2, df=doubled)
    assert any("averaged 10 rows" in str(w.message) for w in caught), [str(w.message) for w in caught]


@pytest.mark.parametrize(("level", "label"), [(50.0000001, "Lévy-lo-50.0000001"), (90, "Lévy-lo-90"),
                                              (97.5, "Lévy-lo-97.5")])
def test_level_labels_are_exact(fitted_dir, fit_obs, level, label):
    pred = LevyForecaster.load(fitted_dir).predict(h="6h", points=2, level=[level], df=fit_obs.frame)
    assert label in pred.columns, list(pred.columns)
