"""The result of reading: [`Observations`][levy_core.data.Observations] and the [`LoadReport`][levy_core.data.LoadReport] beside them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from levy_core.data.columns import ColumnMapping
from levy_core.data.dates import DayOrder
from levy_core.data.errors import DataError
from levy_core.data.messages import quote_list

COLUMNS: tuple[str, ...] = ("series_id", "channel", "time", "value")
"""The columns of `Observations.frame`, in order."""


@dataclass
class LoadReport:
    """What happened while reading a table.

    Attributes
    ----------
    layout : {"long", "wide"}
        Layout of the input table.
    mapping : ColumnMapping
        The column mapping used.
    n_rows_read : int
        Data rows in the input (header not counted).
    n_nan_dropped : int
        Observations dropped for an empty value or an empty time: rows in the long
        layout, (row, channel) cells in the wide layout.
    n_duplicates_merged : int
        Observations merged away: rows repeating a ``(series, channel, time)`` were
        averaged into one.
    time_unit : str
        Unit of `Observations.frame` ``time`` (always "hours").
    time_origin : dict or None
        For date-time input, series id -> UTC `pandas.Timestamp` of that series'
        first observation (time 0); None for numeric time.
    messages : list of str
        Human-readable notes (dropped rows, ignored columns, conversions).
    input_time_unit : str
        The unit of the input's time column: "hours", "minutes", "seconds" or "days" for
        numbers (the ``time_unit`` they were read with; elapsed ``HH:MM`` clocks are
        "hours"), "datetime" for date-times. The user's own clock, for reading query
        times and writing results back (`levy_core.data.clock`).
    input_has_offsets : bool or None
        For date-time input, whether any time cell carried a time-zone designation (an
        offset such as ``+01:00``, ``Z`` or ``UTC``; cells without one were taken as
        UTC); None for numeric time.
    day_order : DayOrder or None
        For dates written as numbers (``02/01/2024``), the order of day and month they
        were read in and the cell that showed it; None otherwise. A queries file whose
        dates cannot tell is read in the same order.
    mapping_given : bool
        Whether ``mapping`` was given to the reader (chosen by hand, e.g. the dashboard's
        column mapping) rather than detected from the column names.
    """

    layout: Literal["long", "wide"]
    mapping: ColumnMapping
    n_rows_read: int
    n_nan_dropped: int = 0
    n_duplicates_merged: int = 0
    time_unit: str = "hours"
    time_origin: dict[str, pd.Timestamp] | None = None
    messages: list[str] = field(default_factory=list)
    input_time_unit: str = "hours"
    input_has_offsets: bool | None = None
    day_order: DayOrder | None = None
    mapping_given: bool = False


@dataclass
class Observations:
    """Observations of several series, long form.

    Attributes
    ----------
    frame : pandas.DataFrame
        Exactly the columns ``series_id`` (str), ``channel`` (str), ``time`` (float64,
        hours) and ``value`` (float64); sorted by ``(series_id, time, channel)``, index
        ``0..n-1``; at most one row per ``(series_id, channel, time)``.
    report : LoadReport
        How the frame was read.
    """

    frame: pd.DataFrame
    report: LoadReport

    def __post_init__(self) -> None:
        """Refuse a frame without exactly the [`COLUMNS`][levy_core.data.COLUMNS] (use ``from_frame``)."""
        if list(self.frame.columns) != list(COLUMNS):
            raise DataError(
                f"Observations need exactly the columns {list(COLUMNS)}, got "
                f"{list(map(str, self.frame.columns))}. Build them with from_frame()."
            )

    @property
    def series_ids(self) -> list[str]:
        """Series ids in frame order (sorted)."""
        return [str(s) for s in pd.unique(self.frame["series_id"])]

    @property
    def channels(self) -> list[str]:
        """Channel names, sorted."""
        return sorted(str(c) for c in pd.unique(self.frame["channel"]))

    @property
    def n_series(self) -> int:
        """Number of series."""
        return int(self.frame["series_id"].nunique())

    @property
    def n_channels(self) -> int:
        """Number of channels."""
        return int(self.frame["channel"].nunique())

    @property
    def n_obs(self) -> int:
        """Number of observations (rows)."""
        return len(self.frame)

    @property
    def time_span(self) -> tuple[float, float]:
        """Earliest and latest time over all series, in hours."""
        t = self.frame["time"].to_numpy()
        return float(t.min()), float(t.max())

    def subset(self, series_ids: Iterable[str]) -> Observations:
        """The observations of some series only.

        Parameters
        ----------
        series_ids : iterable of str
            Series to keep (order irrelevant; the result stays sorted).

        Returns
        -------
        Observations
            A new object sharing this one's report.

        Raises
        ------
        DataError
            If an id is not in the data, or none is given.
        """
        wanted = [str(s) for s in series_ids]
        if not wanted:
            raise DataError("No series selected: pick at least one series id.")
        known = set(self.series_ids)
        unknown = [s for s in wanted if s not in known]
        if unknown:
            raise DataError(
                f"Unknown series id(s) {quote_list(unknown)} in column 'series_id'; "
                f"known ids include {quote_list(self.series_ids)}."
            )
        keep = self.frame["series_id"].isin(set(wanted)).to_numpy()
        frame = self.frame.loc[keep].reset_index(drop=True)
        return Observations(frame=frame, report=self.report)

    def median_gap(self) -> float | None:
        """Median of [`gaps`][levy_core.data.Observations.gaps] in hours (None when no series has two distinct times)."""
        gaps = self.gaps()
        return float(np.median(gaps)) if gaps.size else None

    def gaps(self) -> np.ndarray:
        """Gaps between consecutive distinct observation times within each series.

        Any channel counts as an observation at that time.

        Returns
        -------
        numpy.ndarray
            float64, shape ``(n_gaps,)``, hours, all > 0.
        """
        distinct = self.frame[["series_id", "time"]].drop_duplicates()  # frame is sorted
        t = distinct["time"].to_numpy()
        s = distinct["series_id"].to_numpy()
        same = s[1:] == s[:-1]
        return np.diff(t)[same].astype(np.float64)

    def content_hash(self) -> str:
        """SHA-256 of the frame's content (column names, dtypes and values).

        Returns
        -------
        str
            64 hex digits; equal frames give equal hashes (for caching).
        """
        h = hashlib.sha256()
        h.update(",".join(f"{c}:{self.frame[c].dtype.kind}" for c in COLUMNS).encode())
        h.update(str(len(self.frame)).encode())
        hashed = pd.util.hash_pandas_object(self.frame, index=False).to_numpy()
        h.update(np.ascontiguousarray(hashed).tobytes())
        return h.hexdigest()

    def __repr__(self) -> str:
        """Sizes and time span, not the rows (a frame can have millions)."""
        t0, t1 = self.time_span if self.n_obs else (float("nan"), float("nan"))
        return (
            f"Observations(n_series={self.n_series}, n_channels={self.n_channels}, "
            f"n_obs={self.n_obs}, time_span=({t0:.3g}, {t1:.3g}) h)"
        )
