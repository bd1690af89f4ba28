"""benchmarks/anchors.py: the scores (Gaussian CRPS against properscoring, coverage and
width), the trivial rows' per-lead spread, the end-point split (and --first-end's earlier
windows), the skipped extras, one tiny end-to-end run (no Prophet or statsforecast needed),
every row's standings under the must-show's bars, and the development set kept apart from
the anchors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks import anchors


def test_gaussian_crps_matches_properscoring() -> None:
    properscoring = pytest.importorskip("properscoring")
    rng = np.random.default_rng(0)
    y, mean, sd = rng.normal(size=200), rng.normal(size=200), rng.uniform(0.1, 3.0, 200)
    np.testing.assert_allclose(anchors.gaussian_crps(y, mean, sd), properscoring.crps_gaussian(y, mean, sd),
                               rtol=1e-10, atol=1e-12)
    # from the 90 % interval: sd = (hi - lo) / (2 * 1.6449)
    lo, hi = mean - 1.6448536 * sd, mean + 1.6448536 * sd
    np.testing.assert_allclose(anchors.interval_crps(y, mean, lo, hi), properscoring.crps_gaussian(y, mean, sd),
                               rtol=1e-6)
    # a zero-width band scores the absolute error
    assert anchors.gaussian_crps([2.0], [0.5], [0.0])[0] == pytest.approx(1.5)


def test_coverage_width_mae() -> None:
    pred = pd.DataFrame({"y": [0.0, 1.0, 2.0, 5.0], "mean": [0.0, 0.0, 2.0, 2.0], "lo": [-1.0, -1.0, 1.0, 1.0],
                         "hi": [1.0, 1.0, 3.0, 3.0], "seconds": 0.5})
    s = anchors.score(pred)
    assert s["coverage"] == 0.75  # 1.0 sits on the edge (inside); 5.0 is out
    assert s["width"] == 2.0
    assert s["mae"] == pytest.approx((0 + 1 + 0 + 3) / 4)
    assert s["seconds"] == 0.5 and s["n"] == 4


def test_last_value_spread_grows_like_sqrt_lead_on_a_random_walk() -> None:
    rng = np.random.default_rng(1)
    t = np.arange(4000, dtype=np.float64)
    y = np.cumsum(rng.normal(size=len(t)))
    leads, spread = anchors.lead_spread("last", t, y, None, horizon=16.0, max_origins=400)
    np.testing.assert_allclose(leads, np.arange(1, 17))
    np.testing.assert_allclose(spread, np.sqrt(leads), rtol=0.25)  # RMS of a sum of `lead` unit steps
    assert spread[15] / spread[3] == pytest.approx(2.0, rel=0.2)
    # the queries take the spread of their nearest bin lead
    np.testing.assert_allclose(anchors.spread_at(leads, spread, np.array([1.0, 4.0, 3.6, 16.0, 40.0, 0.2])),
                               spread[[0, 3, 3, 15, 15, 0]])


def test_monthly_leads_fall_one_per_bin() -> None:
    month_ends = pd.date_range("2009-12-01", periods=13, freq="MS")
    lead = ((month_ends[1:] - month_ends[0]) / pd.Timedelta(days=1)).to_numpy()
    horizon = (month_ends[-1] - month_ends[0]) / pd.Timedelta(days=1)
    np.testing.assert_array_equal(anchors.lead_bin(lead, horizon, 12), np.arange(12))


def test_seasonal_naive_and_drift_are_exact_on_a_trending_cycle() -> None:
    t = np.arange(0.0, 96.0)
    y = 0.5 * t + np.sin(2 * np.pi * t / 24)
    q = np.arange(96.0, 130.0)
    truth = 0.5 * q + np.sin(2 * np.pi * q / 24)
    drift = anchors.trivial_forecast("seasonal_naive_drift", t, y, q, 24.0, 12.0)
    np.testing.assert_allclose(drift, truth, atol=1e-9)  # the last season's rise, k seasons ahead
    naive = anchors.trivial_forecast("seasonal_naive", t, y, q, 24.0, 12.0)
    np.testing.assert_allclose(naive - truth, -12.0 * np.ceil((q - 95) / 24 - 1e-9))
    _, spread = anchors.lead_spread("seasonal_naive_drift", t, y, 24.0, 12.0)
    assert spread.max() < 1e-9  # its own errors on the training part are nil
    assert anchors.trivial_forecast("mean", t, y, q, None, 12.0)[0] == pytest.approx(y.mean())


def test_end_points_leave_no_held_out_point_in_training() -> None:
    cases = [anchors.synthetic_case(), *anchors.load_cases(["sensor", "nile", "elnino-30"], lambda _: None)]
    for case in cases:
        for k in (1, 2, 3):
            train, test, end = anchors.split(case, k)
            assert not test.empty and not train.empty
            assert train["time"].max() <= end < test["time"].min()
            assert test["time"].max() <= end + case.horizon
            assert not set(zip(train["time"], train["channel"], strict=True)) & set(
                zip(test["time"], test["channel"], strict=True))
            assert end == case.frame["time"].max() - k * case.horizon  # k horizons before the last time
        assert anchors.split(case, 1)[0]["time"].max() <= case.frame["time"].max() - case.horizon


def test_missing_packages_are_skipped_with_the_message(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setitem(anchors.PACKAGES, "prophet", "no_such_package_for_prophet")
    monkeypatch.setitem(anchors.PACKAGES, "ets", "no_such_package_for_statsforecast")
    case = anchors.synthetic_case(120)
    preds, log = anchors.run([case], ["prophet", "ets", "last"], ends=1, warm=False)
    out = capsys.readouterr().out
    assert "skipping Prophet rows: the package no_such_package_for_prophet is not installed" in out
    assert "skipping AutoETS rows" in out and 'pip install -e ".[anchors]"' in out
    assert set(preds["method"]) == {"last"}


def test_first_end_runs_the_earlier_windows_only() -> None:
    case = anchors.synthetic_case(240)
    preds, _ = anchors.run([case], ["last"], ends=2, first_end=4, warm=False)
    assert sorted(preds["end"].unique()) == [4, 5]
    for k, g in preds.groupby("end"):
        end = case.frame["time"].max() - k * case.horizon
        assert (g["end_time"] == end).all() and g["time"].gt(end).all() and g["time"].le(end + case.horizon).all()
    with pytest.raises(ValueError, match="first_end"):
        anchors.run([case], ["last"], ends=1, first_end=0, warm=False)


def test_tiny_end_to_end_run_prints_the_table(tmp_path: Path, capsys) -> None:
    out, saved = tmp_path / "anchors.txt", tmp_path / "preds"
    case = anchors.synthetic_case(240)
    preds, log = anchors.run([case], ["last", "seasonal_naive", "levy"], ends=1, epochs=1, save_dir=saved,
                             warm=False)  # the warm-up is one more untimed fit of each method: not needed here
    text = anchors.report(preds)
    assert set(preds["method"]) == {"last", "seasonal_naive", "levy"}
    assert len(preds) == 3 * 12  # 12 hourly queries in (end, end + 12 h]
    assert (preds["lo"] <= preds["mean"]).all() and (preds["mean"] <= preds["hi"]).all()
    assert "| synthetic | Lévy |" in text and "| synthetic | seasonal naive |" in text
    assert "median over series of CRPS(Lévy) / CRPS(best other row)" in text
    assert any("levy: training" in line for line in log)
    # the tables re-made from the saved predictions, fitting nothing
    assert anchors.main(["--tables-from", str(saved), "--out", str(out)]) == 0
    assert out.read_text().startswith(text)
    assert text in capsys.readouterr().out


def test_standings_hold_every_row_to_the_same_bars_and_show_split_verdicts() -> None:
    # two series, two ends; CRPS by (series, end): Lévy beats the GP on "a" at one end only
    crps = {("a", 1): {"levy": 1.0, "gp": 2.0, "prophet": 3.0}, ("a", 2): {"levy": 3.0, "gp": 1.0, "prophet": 3.0},
            ("b", 1): {"levy": 2.0, "gp": 1.0, "prophet": 0.5}, ("b", 2): {"levy": 2.0, "gp": 1.0, "prophet": 0.5}}
    folds = pd.DataFrame([{"series": s, "end": e, "method": m, "crps": v, "mae": v, "coverage": 0.9, "width": 1.0,
                           "seconds": 1.0, "n": 1} for (s, e), row in crps.items() for m, v in row.items()])
    lines = anchors.standings(anchors.series_table(folds), folds)
    table = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in lines
             if line.startswith("| ") and "method" not in line and "series" not in line and "÷" not in line}
    # means: a: Lévy 2.0, GP 1.5, Prophet 3.0; b: Lévy 2.0, GP 1.0, Prophet 0.5
    assert table["Lévy"] == ["2", "0 of 2", "1 of 2", "0", f"{(2.0 / 1.5 + 2.0 / 0.5) / 2:.3f}"]
    assert table["GP (sklearn)"][:3] == ["2", "–", "1 of 2"] and table["GP (sklearn)"][3] == "1"
    assert table["Prophet"][1:4] == ["1 of 2", "–", "1"]
    split = [line for line in lines if line.startswith("| a |")]
    assert split == ["| a | 0.50 3.00 (split) | 0.33 1.00 |"]


def test_the_development_fresh_and_unseen_sets_are_separate_from_the_anchors() -> None:
    assert not set(anchors.DEV_CASES) & set(anchors.CASES) and len(anchors.DEV_CASES) >= 10
    assert not set(anchors.FRESH_CASES) & (set(anchors.CASES) | set(anchors.DEV_CASES))
    assert len(anchors.FRESH_CASES) >= 10 and set(anchors.SETS) == {"anchors", "dev", "fresh", "unseen", "rclassics",
                                                                                 "fpp"}
    before = set(anchors.CASES) | set(anchors.DEV_CASES) | set(anchors.FRESH_CASES)
    assert not set(anchors.UNSEEN_CASES) & before and len(anchors.UNSEEN_CASES) >= 10
    assert not set(anchors.RCLASSICS_CASES) & (before | set(anchors.UNSEEN_CASES)) and len(anchors.RCLASSICS_CASES) >= 10
    earlier = before | set(anchors.UNSEEN_CASES) | set(anchors.RCLASSICS_CASES)
    assert not set(anchors.FPP_CASES) & earlier and len(anchors.FPP_CASES) >= 10
    with pytest.raises(SystemExit, match="unknown series"):
        anchors.load_cases(["no-such-series"], lambda _: None)


def test_the_fpp_set_dates_a_weekly_series_from_its_decimal_year() -> None:
    from benchmarks.common.fpp_series import decimal_year_day
    assert decimal_year_day(1991.1) == pd.Timestamp("1991-02-07")  # 0.1 of 365.25 days after 1 January
    assert decimal_year_day(2000.0) == pd.Timestamp("2000-01-01")


def test_the_rclassics_set_reads_r_decimal_years_as_dates() -> None:
    from benchmarks.common.r_classics import _months
    months = _months(pd.Series([1949.0, 1949.0833333, 1949.9166667]), 12)
    assert list(months) == list(pd.to_datetime(["1949-01-01", "1949-02-01", "1949-12-01"]))
    quarters = _months(pd.Series([1960.0, 1960.25, 1960.75]), 4)
    assert list(quarters) == list(pd.to_datetime(["1960-01-01", "1960-04-01", "1960-10-01"]))


def test_prophet_window_counts_calendar_years_without_leaving_pandas_range() -> None:
    # the Nile's second end point: 1871-1950; 1950 minus 280 years lies before pandas' 1677
    nile = pd.Series(pd.to_datetime([f"{y}-07-01" for y in range(1871, 1951)]))
    assert anchors.within_years(nile, anchors.PROPHET_MAX_YEARS).all()
    # sunspots since 1700, ending 1997: the latest 280 years only (spanning more than 292)
    spots = pd.Series(pd.to_datetime([f"{y}-07-01" for y in range(1700, 1998)]))
    kept = spots[anchors.within_years(spots, anchors.PROPHET_MAX_YEARS)]
    assert kept.dt.year.min() == 1997 - 279 and kept.dt.year.max() == 1997


def _folds(crps: dict) -> pd.DataFrame:
    return pd.DataFrame([{"series": s, "end": e, "method": m, "crps": v, "mae": v, "coverage": 0.9, "width": 1.0,
                          "seconds": 1.0, "n": 1} for (s, e), row in crps.items() for m, v in row.items()])


def test_end_point_bootstrap_is_paired_and_shows_how_often_a_verdict_flips() -> None:
    # "a": Lévy below the GP at every end (the verdict holds in every draw); "b": Lévy below
    # at one end of two, by less than it loses at the other (it holds only in the draws that
    # pick that end twice: a quarter of them)
    crps = {("a", 1): {"levy": 1.0, "gp": 2.0, "prophet": 3.0}, ("a", 2): {"levy": 5.0, "gp": 6.0, "prophet": 7.0},
            ("b", 1): {"levy": 1.0, "gp": 1.5, "prophet": 0.5}, ("b", 2): {"levy": 3.0, "gp": 1.0, "prophet": 0.5}}
    lines = anchors.end_point_bootstrap(_folds(crps), draws=4000, seed=1)
    share = dict(item.split(" ") for item in lines[-1].split(": ", 1)[1].split(", "))
    assert float(share["a"]) == 1.0  # paired: the end drawn for Lévy is the one drawn for the GP
    assert float(share["b"]) == pytest.approx(0.25, abs=3 * (0.25 * 0.75 / 4000) ** 0.5)
    gp_row = next(line for line in lines if line.startswith("| Lévy CRPS ≤ GP"))
    cells = [c.strip() for c in gp_row.split("|")[2:-1]]
    assert cells[0] == "1"  # as run: series means a 3 vs 4, b 2 vs 1.25
    assert float(cells[2]) == pytest.approx(0.25, abs=0.03)  # 2 of 2 needed: "a" always, "b" in a quarter


def test_end_point_bootstrap_needs_lévy_rows_and_another_to_compare() -> None:
    assert anchors.end_point_bootstrap(_folds({("a", 1): {"gp": 1.0, "prophet": 2.0}})) == []
    # a Lévy-only run (--methods levy) has nothing to compare: no table, no crash
    assert anchors.end_point_bootstrap(_folds({("a", 1): {"levy": 1.0}, ("a", 2): {"levy": 2.0}})) == []


def test_coverage_by_lead_cuts_each_window_in_three_by_time() -> None:
    """Two windows of six queries (given out of time order): a band that covers the first
    third always, the middle once in two, the last never; another method everywhere."""
    rows = []
    for end in (1, 2):
        for i in (5, 3, 1, 0, 2, 4):  # shuffled: the thirds follow the times, not the row order
            hit = i < 2 or (i < 4 and (i + end) % 2 == 0)
            rows += [{"series": "s", "end": end, "method": "levy", "time": pd.Timestamp("2020-01-01") + pd.Timedelta(hours=i),
                      "y": 0.0 if hit else 5.0, "lo": -1.0, "hi": 1.0},
                     {"series": "s", "end": end, "method": "gp", "time": pd.Timestamp("2020-01-01") + pd.Timedelta(hours=i),
                      "y": 0.0, "lo": -1.0, "hi": 1.0}]
    lines = anchors.coverage_by_lead(pd.DataFrame(rows))
    assert "| Lévy | 1.000 | 0.500 | 0.000 |" in lines
    assert "| GP (sklearn) | 1.000 | 1.000 | 1.000 |" in lines
