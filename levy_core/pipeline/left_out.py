"""The series of a panel that sit out of a forecast fit, counted and named.

A forecast on a panel split by series with one global cut-off: a series with no observation
at or before it has no context, one with none after it (within the horizon) has nothing to
predict, and either sits out of training, calibration and test alike (``EpisodeBuilder.usable``).
On the PBC follow-up that is 81 of 312 patients at day 667. With each series' own cut-off
(``TaskConfig.cutoff_fraction``, the default where it keeps more series in) only a series
observed at a single time, or with nothing within the horizon after its cut-off, sits out.
`left_out_series` records them per role and reason (``FittedModel.training["left_out"]``,
saved in model.json); `left_out_note` says it in plain words for ``levy fit`` and the
dashboard's Fit panel.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from levy_core.data.durations import say_time
from levy_core.episodes.cutoffs import median_midpoint
from levy_core.episodes.tasks import PER_SERIES_DEFAULT, EpisodeBuilder, Split, TaskConfig

__all__ = ["LISTED", "REASONS", "left_out_note", "left_out_series"]

LISTED = 20
"""How many left-out series are named (the count covers them all)."""

REASONS = {"no_history": "no observation before the cut-off", "no_future": "none after it"}
"""The reasons a series sits out, as recorded (keys) and as said (values)."""


def left_out_series(builder: EpisodeBuilder, split: Split) -> dict[str, Any] | None:
    """The series of each role of a forecast panel split by series with no context (no
    observation at or before the cut-off: ``no_history``) or nothing to predict (none after
    it, within the horizon: ``no_future``), or None for any other fit (rolling origins,
    windows, interpolation), where no series is dropped by a cut-off.

    The layout: ``{"count": n, "of": all series, "cutoff": hours (None for each series' own),
    "cutoff_fraction": the share of each series' span (None for one cut-off),
    "by_reason": {reason: n}, "by_role": {role: n}, "series": the first LISTED ids (split
    order), "reasons": their reason each, "own_cutoff_keeps": how many of them each series'
    own cut-off at its midpoint would take in (0 when the fit has it already)}``, and for each
    series' own cut-off ``"common_cutoff"`` (hours: one cut-off for all, the median midpoint)
    with ``"common_left_out"`` (how many series it would leave out); ``count`` 0 when every
    series takes part."""
    if split.mode != "series" or builder.task.kind != "forecast":
        return None
    roles = {"train": split.fitting(), "stopping": split.stopping, "calibration": split.calibration, "test": split.test}
    by_reason = dict.fromkeys(REASONS, 0)
    by_role = dict.fromkeys(roles, 0)
    named: list[str] = []
    reasons: list[str] = []
    total = keeps = 0
    own = None if builder.task.per_series else dataclasses.replace(
        builder.task, cutoff=None, cutoff_fraction=PER_SERIES_DEFAULT)
    for role, ids in roles.items():
        for sid in ids:
            total += 1
            if sid not in builder.series:
                reason = "no_history"  # no observation at all
            else:
                ctx, qry = builder.split_indices(sid)
                if len(ctx) and len(qry):
                    continue
                reason = "no_history" if not len(ctx) else "no_future"
                keeps += own is not None and _takes_part(builder.series[sid].time, own)
            by_reason[reason] += 1
            by_role[role] += 1
            if len(named) < LISTED:
                named.append(str(sid))
                reasons.append(reason)
    task = builder.task
    cutoff = None if task.cutoff_fraction is not None else float(task.cutoff)  # type: ignore[arg-type]
    info = {"count": sum(by_reason.values()), "of": total, "cutoff": cutoff, "cutoff_fraction": task.cutoff_fraction,
            "by_reason": by_reason, "by_role": by_role, "series": named, "reasons": reasons,
            "own_cutoff_keeps": int(keeps)}
    if task.per_series:
        info |= _common_rule(builder, [sid for ids in roles.values() for sid in ids])
    return info


def _common_rule(builder: EpisodeBuilder, ids: list[str]) -> dict[str, Any]:
    """One cut-off for all, the median series midpoint (as ``resolve_task`` picks it), and how
    many of ``ids`` it would leave out: what each series' own cut-off spares them."""
    spans = [(float(s.time.min()), float(s.time.max())) for s in builder.series.values() if len(s.time)]
    frame = pd.DataFrame({"series_id": np.repeat(np.arange(len(spans)), 2), "time": np.ravel(spans)})
    common = dataclasses.replace(builder.task, cutoff=median_midpoint(frame), cutoff_fraction=None)
    out = sum(1 for sid in ids if sid not in builder.series or not _takes_part(builder.series[sid].time, common))
    return {"common_cutoff": float(common.cutoff), "common_left_out": int(out)}  # type: ignore[arg-type]


def _takes_part(times: np.ndarray, task: TaskConfig) -> bool:
    """Whether a series observed at ``times`` ((n,) hours, n ≥ 1) has context and a query under ``task``."""
    cut = task.series_cutoff(times)
    end = np.inf if task.horizon is None else cut + float(task.horizon)
    return bool(len(times)) and bool((times <= cut).any() and ((times > cut) & (times <= end)).any())


def time_in_unit(hours: float, unit: str | None) -> str:
    """A time of the pipeline's clock (hours) in the data's clock ("730.5 days", "24 hours",
    "2 years after each series' first observation": `say_time`)."""
    return say_time(hours, unit)


def left_out_note(training: dict[str, Any] | None, unit: str | None = None) -> str | None:
    """Plain words when series sat out of the fit (None when none did, or for a model saved
    before this was recorded): how many, why, the first few by name, and what to do. ``unit``:
    the data's time unit (``RecordedReading.time_unit``), the cut-off is said in it."""
    info = (training or {}).get("left_out")
    if not isinstance(info, dict):
        return None
    n, of = int(info.get("count") or 0), int(info.get("of", 0))
    spared = int(info.get("common_left_out") or 0) - n if info.get("cutoff_fraction") is not None else 0
    why = ""
    if spared > 0 and info.get("common_cutoff") is not None:
        common = time_in_unit(float(info["common_cutoff"]), unit)
        why = (f"Each series has its own cut-off, at {100 * float(info['cutoff_fraction']):g} % of its span: one "
               f"cut-off for all (the median series midpoint, {common}) would leave out "
               f"{int(info['common_left_out'])} of {of} series, {spared} more than this fit.")
    if not n:
        return why or None
    counts = {k: int((info.get("by_reason") or {}).get(k, 0)) for k in REASONS}
    early, late = counts["no_history"], counts["no_future"]
    names = [str(s) for s in info.get("series") or []]
    listed = ", ".join(names) + (", …" if n > len(names) else "")
    series = "series sits" if n == 1 else "series sit"
    if info.get("cutoff_fraction") is not None:
        share = f"{100 * float(info['cutoff_fraction']):g} %"
        head = (f"{why} {n} of {of} {series} out of this fit" if why
                else f"{n} of {of} {series} out of this fit (cut-off at {share} of each series' own span)")
        return (f"{head}: {listed}; a series takes part when observed at two different times at least (and, with a "
                "horizon set, once within it after its cut-off).")
    cut = time_in_unit(float(info.get("cutoff") or 0.0), unit)

    def have(k: int) -> str:
        return "has" if k == 1 else "have"

    why = []
    if early:
        why.append(f"{early} {have(early)} no observation before the cut-off ({cut})")
    if late:
        why.append(f"{late} none after it" if early else f"{late} {have(late)} no observation after the cut-off ({cut})")
    if early and late:
        remedy = "a later cut-off gives history to the first, an earlier one something to predict to the others"
    elif early:
        remedy = "fit with a later cut-off to include them"
    else:
        remedy = "fit with an earlier cut-off to include them"
    keeps = int(info.get("own_cutoff_keeps") or 0)
    own = (f"; each series' own cut-off (cut-off \"auto\": at the midpoint of its span) would take in {keeps} of them"
           if keeps else "")
    return f"{n} of {of} {series} out of this fit: {', '.join(why)}: {listed}; {remedy}{own}."
