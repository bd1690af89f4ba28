"""Tables laid out for people (labels, percentages, verdicts) from ``levy_core`` results.

Pure layout: every number here was computed by ``levy_core``; this module only names and
formats it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["GUARANTEE_CAPTION", "METRIC_ROWS", "backtest_table", "channel_coverage_at", "channel_verdict_table",
           "data_units_table", "drift_table", "guarantee_table", "metrics_table", "timing_rows", "training_table"]

METRIC_ROWS: list[tuple[str, str]] = [
    ("mse", "MSE (normalised)"),
    ("mae", "MAE (normalised)"),
    ("crps", "CRPS (normalised)"),
    ("nll", "NLL (normalised)"),
    ("mean_width_90", "mean width of the 90 % band (normalised)"),
    ("spearman_sigma_abs_error", "Spearman(σ, |error|)"),
]

GUARANTEE_CAPTION = (
    "Split conformal promises at least the band's level on average when series are exchangeable. "
    "The queries of one series share its difficulty, so the coverage of one test split strays "
    "from the level by the per-series standard error (test and calibration draws), often "
    "several times the binomial one; the window is level − 3 s.e. to level + 1/(n+1) + 3 s.e. "
    "The last column shows the verdict the binomial s.e. would give."
)


def metrics_table(result: dict[str, Any]) -> pd.DataFrame:
    """The ``evaluate`` metrics of the Lévy closed form and MC-Dropout, one column each."""
    methods = [("Lévy (closed form)", result.get("levy"))]
    if result.get("mc_dropout"):
        methods.append((f"MC-Dropout (T = {result['mc_dropout'].get('passes')})", result["mc_dropout"]))
    rows: dict[str, dict[str, float]] = {}
    for name, m in methods:
        col: dict[str, float] = {label: m[k] for k, label in METRIC_ROWS}
        for lvl, v in m["coverage"].items():
            col[f"coverage of the {100 * float(lvl):.0f} % band (scaled Gaussian)"] = v
        for lvl, v in m["conformal_coverage"].items():
            col[f"coverage of the {100 * float(lvl):.0f} % band (conformal)"] = v
        col["seconds for the test split's uncertainty"] = m["seconds"]
        col["ms per query"] = 1000 * m["seconds"] / max(1, result["n_test"])
        rows[name] = col
    return pd.DataFrame(rows)


def data_units_table(result: dict[str, Any]) -> pd.DataFrame | None:
    """``evaluate``'s scores per channel in the channel's own units (its
    ``per_channel_data_units``): one row per channel, its test queries and each method's MAE,
    RMSE and CRPS; None for a result without them."""
    methods = [(name, result.get(k)) for k, name in (("levy", "Lévy"), ("mc_dropout", "MC-Dropout"))]
    methods = [(name, m["per_channel_data_units"]) for name, m in methods if m and m.get("per_channel_data_units")]
    if not methods:
        return None
    rows = []
    for channel, first in methods[0][1].items():
        row: dict[str, Any] = {"channel": channel, "test queries": first["n"]}
        for name, per in methods:
            score = per.get(channel) or {}
            row.update({f"{name} {s.upper()}": score.get(s) for s in ("mae", "rmse", "crps")})
        rows.append(row)
    return pd.DataFrame(rows)


def training_table(training: dict[str, Any]) -> pd.DataFrame:
    """``FittedModel.training`` for people: one row per model (Lévy, the MC-Dropout twin when
    trained) with its epochs run, best epoch, seconds and best early-stopping MSE."""
    rows = {"Lévy": training["levy"]}
    if training.get("softmax"):
        rows["MC-Dropout twin"] = training["softmax"]
    return pd.DataFrame(rows).T.rename(columns={"best_epoch": "best epoch", "epochs_run": "epochs run",
                                                "seconds": "seconds", "best_val_mse": "best early-stopping MSE"})


def timing_rows(training: dict[str, Any], result: dict[str, Any]) -> pd.DataFrame:
    """Training and uncertainty wall times per method: columns method, stage, seconds."""
    rows = [
        ("Lévy", "training", training["levy"]["seconds"]),
        ("Lévy", "uncertainty on the test split", result["levy"]["seconds"]),
    ]
    if result.get("mc_dropout") and training.get("softmax"):
        label = f"MC-Dropout (T={result['mc_dropout']['passes']})"
        rows += [
            (label, "training", training["softmax"]["seconds"]),
            (label, "uncertainty on the test split", result["mc_dropout"]["seconds"]),
        ]
    return pd.DataFrame(rows, columns=["method", "stage", "seconds"])


def _verdict(ok: bool | None) -> str:
    return "–" if ok is None else ("holds" if ok else "outside")


def _window(row: pd.Series) -> str:
    if row["lower_series"] is None:
        return "– (one series)"
    lo, hi = max(0.0, row["lower_series"]), min(1.0, row["upper_series"])
    return f"{100 * lo:.1f} – {100 * hi:.1f} %"


def guarantee_table(checks: pd.DataFrame, coverage_label: str = "coverage on the test split") -> pd.DataFrame:
    """``pipeline.coverage_checks`` for people: per method and level, the conformal band's
    coverage, the window a valid band lies in (per-series s.e.) and both verdicts."""
    return pd.DataFrame(
        {
            "method": checks["method"],
            "band": [f"{100 * lv:.0f} %" for lv in checks["level"]],
            coverage_label: [f"{100 * c:.1f} %" for c in checks["coverage"]],
            "window (per-series s.e.)": checks.apply(_window, axis=1),
            "verdict": [_verdict(v) for v in checks["holds_series"]],
            "if queries were independent": [_verdict(v) for v in checks["holds_binomial"]],
        }
    )


def bound_text(bound: float, *, short: bool = False) -> str:
    """ACI's long-run bound on the walk's miss rate, for people: ``± x points``, or that it
    does not constrain the miss rate yet. With one step per horizon of overlapping origins
    (``levy_core.calibration.over_time.origin_gamma``) a few horizons of test origins give a
    bound above 100 %: true, and empty. ``short``: "none yet" alone (a metric's width)."""
    if not 0 <= bound < 1:
        return "none yet" if short else f"none yet (± {100 * bound:.0f} points)"
    return f"± {100 * bound:.1f} points"


def backtest_table(result: dict[str, Any]) -> pd.DataFrame:
    """The adaptive conformal walk over the test origins (``evaluate`` on rolling origins),
    per method and level: its long-run coverage, the bound Proposition 4.1 of Gibbs & Candès
    puts on its distance from the level, its mean width, and split conformal's coverage on
    the same queries for comparison."""
    rows = []
    for name, key in (("Lévy", "levy"), ("MC-Dropout", "mc_dropout")):
        m = result.get(key) or {}
        for lvl, cov in (m.get("adaptive_coverage") or {}).items():
            split = (m.get("conformal_coverage") or {}).get(lvl)
            rows.append({
                "method": name,
                "band": f"{100 * float(lvl):.0f} %",
                "adaptive conformal: coverage": f"{100 * cov:.1f} %",
                "long-run bound": bound_text(m["adaptive_bound"][lvl]),
                "adaptive: mean width (normalised)": f"{m['adaptive_mean_width'][lvl]:.3g}",
                "split conformal: coverage": "–" if split is None else f"{100 * split:.1f} %",
            })
    return pd.DataFrame(rows)


def channel_verdict_table(by_channel: pd.DataFrame) -> pd.DataFrame:
    """``CoverageMonitor.by_channel`` for people: one row per channel, one column per level,
    each cell the coverage, the verdict and, when outside, the window."""
    def cell(row: pd.Series) -> str:
        text = f"{100 * row['coverage']:.1f} % {_verdict(bool(row['holds']))}"
        if not row["holds"]:
            text += f" ({100 * max(0.0, row['lower']):.1f} – {100 * min(1.0, row['upper']):.1f} %)"
        return text

    if by_channel.empty:
        return pd.DataFrame(columns=["channel", "observed queries"])
    cells = by_channel.assign(cell=by_channel.apply(cell, axis=1), band=[f"{100 * lv:.0f} %" for lv in by_channel["level"]])
    table = cells.pivot(index="channel", columns="band", values="cell")
    table = table[[f"{100 * lv:.0f} %" for lv in pd.unique(by_channel["level"])]]
    counts = by_channel.drop_duplicates("channel").set_index("channel")["n"]
    return table.assign(**{"observed queries": counts}).reset_index().rename_axis(columns=None)


def channel_coverage_at(by_channel: pd.DataFrame, level: float) -> tuple[pd.DataFrame, float]:
    """The rows of one level as ``charts.channel_coverage_figure`` draws them (channel,
    method, coverage, n), and that level: the checked level nearest ``level``."""
    if by_channel.empty:
        return pd.DataFrame(columns=["channel", "method", "coverage", "n"]), level
    nearest = float(min(pd.unique(by_channel["level"]), key=lambda lv: abs(lv - level)))
    rows = by_channel[by_channel["level"] == nearest]
    return pd.DataFrame({"channel": rows["channel"], "method": "Lévy", "coverage": rows["coverage"],
                         "n": rows["n"]}), nearest


def drift_table(flags: pd.DataFrame) -> pd.DataFrame:
    """``levy_core.data.drift`` flags (one row per channel and kind) as the Monitoring panel
    shows them: what was measured, in training and on this data, and what it means."""
    return pd.DataFrame({"channel": flags["channel"], "drift": flags["kind"], "measured": flags["figure"],
                         "training": flags["training"].map(lambda v: f"{v:.4g}"),
                         "this data": flags["new"].map(lambda v: f"{v:.4g}"), "what it means": flags["message"]})
