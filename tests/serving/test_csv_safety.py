"""Spreadsheet formula injection (issue 12): ``levy_core.serving.csv_safety`` and every CSV the CLI
writes. A text cell starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return gets a
leading ``'`` (OWASP), unless it is a plain number; numbers never change."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core.cli import evaluate as cli_evaluate
from levy_core.cli import main as cli
from levy_core.serving import table_writer
from levy_core.serving.csv_safety import (
    DANGEROUS_PREFIXES,
    is_plain_number,
    neutralise,
    neutralise_cell,
    to_safe_csv,
)

HOSTILE = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "@SUM(1)", "-2+3", "\tx", "\rx"]
NUMBERS_AS_TEXT = ["-1.5", "+3", "1e-3", "-2e-3", ".5", "-0", "+.25E+2"]


def read_both(text: str) -> tuple[pd.DataFrame, list[list[str]]]:
    """The CSV ``text`` read back by pandas and by the csv module (numbers to the nearest
    double: pandas 2's default parser can land one unit in the last place away)."""
    frame = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""], float_precision="round_trip")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return frame, rows


# ----------------------------------------------------------------------------- the cells


@pytest.mark.parametrize("cell", HOSTILE + ["-", "+", "=", "@", "-inf", "+nan", "- 1", "-1 ", "-1,5", "-1_0",
                                            "-١", "\t-1", "\r=1", "=1+1", "-x"])
def test_dangerous_text_gets_a_leading_quote(cell: str) -> None:
    assert cell.startswith(DANGEROUS_PREFIXES)
    assert not is_plain_number(cell)
    assert neutralise_cell(cell) == "'" + cell


@pytest.mark.parametrize("cell", NUMBERS_AS_TEXT + ["ok", "", " =x", "'=already", "x=1", "1-2", "12"])
def test_numbers_and_harmless_text_are_kept(cell: str) -> None:
    assert neutralise_cell(cell) == cell


@pytest.mark.parametrize("value", [-1.5, -3, np.float32(-2.5), None, np.nan, pd.NaT, True])
def test_non_text_cells_are_kept(value: object) -> None:
    assert neutralise_cell(value) is value


def test_neutralise_touches_text_cells_and_labels_only() -> None:
    n = len(HOSTILE) + len(NUMBERS_AS_TEXT)
    frame = pd.DataFrame({
        "series_id": HOSTILE + NUMBERS_AS_TEXT,
        "=label": np.linspace(-3, 3, n),
        "count": np.arange(n) - 4,
        "flag": [True, False] * (n // 2) + [True] * (n % 2),
        "when": pd.date_range("2024-01-01", periods=n, freq="h"),
        "mixed": [-1.5, "-x", None, "@y", 3, "+1"] + ["ok"] * (n - 6),
        "kind": pd.Categorical(["-a", "b"] * (n // 2) + ["b"] * (n % 2)),
    })
    frame.attrs["note"] = "kept"
    before = frame.copy()
    out = neutralise(frame)
    pd.testing.assert_frame_equal(frame, before)  # the input is not modified
    assert list(out.columns) == ["series_id", "'=label", "count", "flag", "when", "mixed", "kind"]
    assert list(out["series_id"]) == ["'" + h for h in HOSTILE] + NUMBERS_AS_TEXT
    for col in ("count", "flag", "when"):  # numeric, boolean, date-time: identical, same dtype
        pd.testing.assert_series_equal(out[col], frame[col])
    pd.testing.assert_series_equal(out["'=label"], frame["=label"], check_names=False)
    assert list(out["mixed"])[:6] == [-1.5, "'-x", None, "'@y", 3, "+1"]
    assert set(out["kind"]) == {"'-a", "b"}
    assert out.attrs == {"note": "kept"}
    pd.testing.assert_frame_equal(neutralise(out), out)  # twice changes nothing more


def test_index_labels_and_names_are_neutralised() -> None:
    frame = pd.DataFrame({"v": [1.0, -2.0]}, index=pd.Index(["=a", "-1"], name="@id"))
    out = neutralise(frame)
    assert list(out.index) == ["'=a", "-1"] and out.index.name == "'@id"
    multi = pd.DataFrame([[1, 2]], columns=pd.MultiIndex.from_tuples([("=a", "x"), ("b", "+c")]))
    assert list(neutralise(multi).columns) == [("'=a", "x"), ("b", "'+c")]
    numeric = pd.DataFrame({"v": [1.0]}, index=pd.RangeIndex(1))
    pd.testing.assert_frame_equal(neutralise(numeric), numeric)


def test_to_safe_csv_reads_back_neutralised_with_numbers_unchanged(tmp_path: Path) -> None:
    values = np.array([-1.0 / 3.0, -2.5e-17, 1e300, -7.0, 0.1, np.nan, -np.inf, 42.0, 3.0, -0.0, 1.5, 2.0, 5.0])
    frame = pd.DataFrame({"series_id": HOSTILE + NUMBERS_AS_TEXT, "value": values})
    text = to_safe_csv(frame, index=False)
    assert isinstance(text, str)
    back, rows = read_both(text)
    assert rows[0] == ["series_id", "value"]
    assert [r[0] for r in rows[1:]] == ["'" + h for h in HOSTILE] + NUMBERS_AS_TEXT  # tab and CR kept, quoted
    assert [str(v) for v in back["series_id"]] == [r[0] for r in rows[1:]]
    np.testing.assert_array_equal(back["value"].to_numpy(), values)  # bit for bit, NaN and -inf included
    path = tmp_path / "out.csv"
    assert to_safe_csv(frame, path, index=False) is None
    assert path.read_bytes().decode() == text


def test_a_carriage_return_inside_a_cell_does_not_split_the_row() -> None:
    """Python's csv module leaves a bare ``\\r`` unquoted with a ``\\n`` line ending; to_safe_csv
    switches to ``\\r\\n`` then, so every reader sees one row per record."""
    frame = pd.DataFrame({"series_id": ["a\rb", "\rx", "c"], "v": [1.0, -2.0, 3.0]})
    back, rows = read_both(to_safe_csv(frame, index=False))
    assert [r[0] for r in rows[1:]] == ["a\rb", "'\rx", "c"]
    assert list(back["series_id"]) == ["a\rb", "'\rx", "c"] and list(back["v"]) == [1.0, -2.0, 3.0]
    plain = to_safe_csv(frame.iloc[[2]], index=False)
    assert plain == "series_id,v\nc,3.0\n"  # no carriage return: the usual line ending


# ----------------------------------------------------------------------------- through the CLI

# Every series id is hostile or a number written as text. The data reader strips ids, so
# "\tx" / "\ry" arrive as "x" / "y" (harmless) and "\t=2*3" / "\r@x" arrive as formulas.
IDS = HOSTILE[:4] + ["\tx", "\ry", "=1+1", "-1+2", "+A1", "@A1", "=cmd|'/c calc'!A1", "-x", "\t=2*3", "\r@x",
                     "-7", "+3.5"]
CHANNELS = {"coupled": "-coupled", "noisy": "@noisy"}  # "smooth" stays, shifted to negative values


@pytest.fixture(scope="module")
def hostile(fit_csv: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(data CSV with hostile ids and channel names, model directory fitted on it)."""
    frame = pd.read_csv(fit_csv, dtype={"series_id": str})
    series = sorted(frame["series_id"].unique())
    assert len(series) == len(IDS)
    frame["series_id"] = frame["series_id"].map(dict(zip(series, IDS, strict=True)))
    frame.loc[frame["channel"] == "smooth", "value"] -= 20.0  # negative values and predictions
    frame["channel"] = frame["channel"].replace(CHANNELS)
    tmp = tmp_path_factory.mktemp("hostile")
    data, model = tmp / "hostile.csv", tmp / "model"
    frame.to_csv(data, index=False)
    # --nice 0: the worker's own priority (the default, 10, waits behind every other job on the machine)
    code = cli.main(["fit", str(data), "--out", str(model), "--epochs", "1", "--no-twin", "--quiet", "--nice", "0"])
    assert code == 0
    return data, model


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[pd.DataFrame]:
    """Record each frame the CLI hands to ``to_safe_csv`` (what it would write unprotected)."""
    seen: list[pd.DataFrame] = []

    def recording(frame: pd.DataFrame, *args, **kwargs):
        seen.append(frame.copy())
        return to_safe_csv(frame, *args, **kwargs)

    monkeypatch.setattr(cli_evaluate, "to_safe_csv", recording)  # evaluate --predictions
    monkeypatch.setattr(table_writer, "to_safe_csv", recording)  # predict and rank write through TableWriter
    return seen


def _check_written(path: Path, written: pd.DataFrame) -> set[str]:
    """``path`` read back both ways against the frame the CLI computed: text cells
    neutralised, numbers bit for bit; returns the series ids as written."""
    text = path.read_bytes().decode()
    back, rows = read_both(text)
    assert rows[0] == list(written.columns) and len(rows) == len(written) + 1
    for col in written.columns:
        j = rows[0].index(col)
        cells = [r[j] for r in rows[1:]]
        if pd.api.types.is_numeric_dtype(written[col]) and not pd.api.types.is_bool_dtype(written[col]):
            kind = written[col].to_numpy().dtype  # float32 columns are written at float32 precision
            np.testing.assert_array_equal(back[col].to_numpy().astype(kind), written[col].to_numpy())
            assert not any(c.startswith("'") for c in cells), col
        elif pd.api.types.is_object_dtype(written[col]) or pd.api.types.is_string_dtype(written[col]):
            assert cells == [neutralise_cell(v) for v in written[col]], col
            assert [str(v) for v in back[col]] == cells, col
    for r in rows:  # nothing a spreadsheet would evaluate, anywhere in the file
        assert not any(c.startswith(DANGEROUS_PREFIXES) and not is_plain_number(c) for c in r), r
    return set(back["series_id"].astype(str))


EXPECTED_IDS = {neutralise_cell(i.strip()) for i in IDS}


def test_the_hostile_ids_reach_the_model(hostile) -> None:
    from levy_core.pipeline.modelfile import load_model

    fitted = load_model(hostile[1])
    assert sorted(fitted.channels) == sorted(["-coupled", "@noisy", "smooth"])
    split = fitted.split
    assert {i.strip() for i in IDS} == set(split.train + split.stopping + split.calibration + split.test)


def test_predict_csv_is_neutralised(hostile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spy(monkeypatch)
    out = tmp_path / "pred.csv"
    assert cli.main(["predict", str(hostile[1]), str(hostile[0]), "--out", str(out), "--points", "3"]) == 0
    assert len(seen) == 1
    assert _check_written(out, seen[0]) == EXPECTED_IDS
    channels = {r[1] for r in list(csv.reader(out.open(newline="")))[1:]}
    assert channels == {"'-coupled", "'@noisy", "smooth"}
    assert (seen[0]["mean"] < 0).any(), "negative numbers are written as numbers"


def test_evaluate_predictions_csv_is_neutralised(hostile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spy(monkeypatch)
    out = tmp_path / "test.csv"
    code = cli.main(["evaluate", str(hostile[1]), str(hostile[0]), "--json", str(tmp_path / "e.json"),
                     "--predictions", str(out), "--mc-passes", "2"])
    assert code == 0 and len(seen) == 1
    ids = _check_written(out, seen[0])
    assert ids and ids <= EXPECTED_IDS and any(i.startswith("'") for i in ids)
    assert (seen[0]["y_true"] < 0).any()


def test_rank_csv_is_neutralised(hostile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spy(monkeypatch)
    out = tmp_path / "rank.csv"
    assert cli.main(["rank", str(hostile[1]), str(hostile[0]), "--out", str(out)]) == 0
    assert len(seen) == 1
    assert _check_written(out, seen[0]) == EXPECTED_IDS
    back = pd.read_csv(out, dtype={"series_id": str})
    assert {"-7", "+3.5"} <= set(back["series_id"])  # numbers as text stay as they are
