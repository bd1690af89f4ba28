"""The series of a panel that sit out of a forecast fit, counted and named.

A forecast on a panel split by series has one global cut-off: a series with no observation
at or before it has no context, one with none after it (within the horizon) has nothing to
predict, and either sits out of training, calibration and test alike (``EpisodeBuilder.usable``).
On the PBC follow-up that is 81 of 312 patients. `left_out_series` records them per role
and reason (``FittedModel.training["left_out"]``, saved in model.json); `left_out_note`
says it in plain words for ``levy fit`` and the dashboard's Fit panel.
"""

from __future__ import annotations

from typing import Any

from levy_core.data.times import TIME_UNITS
from levy_core.episodes.tasks import EpisodeBuilder, Split

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

    The layout: ``{"count": n, "of": all series, "cutoff": hours, "by_reason": {reason: n},
    "by_role": {role: n}, "series": the first LISTED ids (split order), "reasons": their
    reason each}``; ``count`` 0 when every series takes part."""
    if split.mode != "series" or builder.task.kind != "forecast":
        return None
    roles = {"train": split.fitting(), "stopping": split.stopping, "calibration": split.calibration, "test": split.test}
    by_reason = dict.fromkeys(REASONS, 0)
    by_role = dict.fromkeys(roles, 0)
    named: list[str] = []
    reasons: list[str] = []
    total = 0
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
            by_reason[reason] += 1
            by_role[role] += 1
            if len(named) < LISTED:
                named.append(str(sid))
                reasons.append(reason)
    return {"count": sum(by_reason.values()), "of": total, "cutoff": float(builder.task.cutoff),
            "by_reason": by_reason, "by_role": by_role, "series": named, "reasons": reasons}


def time_in_unit(hours: float, unit: str | None) -> str:
    """A time of the pipeline's clock (hours) in the data's unit ("730.5 days", "24 h")."""
    if unit in TIME_UNITS and unit != "hours":
        return f"{hours / TIME_UNITS[unit]:g} {unit}"
    return f"{hours:g} h"


def left_out_note(training: dict[str, Any] | None, unit: str | None = None) -> str | None:
    """Plain words when series sat out of the fit (None when none did, or for a model saved
    before this was recorded): how many, why, the first few by name, and what to do. ``unit``:
    the data's time unit (``RecordedReading.time_unit``), the cut-off is said in it."""
    info = (training or {}).get("left_out")
    if not isinstance(info, dict) or not info.get("count"):
        return None
    n, of = int(info["count"]), int(info.get("of", 0))
    counts = {k: int((info.get("by_reason") or {}).get(k, 0)) for k in REASONS}
    early, late = counts["no_history"], counts["no_future"]
    cut = time_in_unit(float(info.get("cutoff", 0.0)), unit)

    def have(k: int) -> str:
        return "has" if k == 1 else "have"

    why = []
    if early:
        why.append(f"{early} {have(early)} no observation before the cut-off ({cut})")
    if late:
        why.append(f"{late} none after it" if early else f"{late} {have(late)} no observation after the cut-off ({cut})")
    names = [str(s) for s in info.get("series") or []]
    listed = ", ".join(names) + (", …" if n > len(names) else "")
    if early and late:
        remedy = "a later cut-off gives history to the first, an earlier one something to predict to the others"
    elif early:
        remedy = "fit with a later cut-off to include them"
    else:
        remedy = "fit with an earlier cut-off to include them"
    series = "series sits" if n == 1 else "series sit"
    return f"{n} of {of} {series} out of this fit: {', '.join(why)}: {listed}; {remedy}."
