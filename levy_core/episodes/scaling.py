"""Per-channel normalisation of the model's inputs and outputs (:class:`ChannelScaler`).

Fitted on the training series only, saved with the model as plain JSON (no pickle), and
used to put predictions and their spreads back into each channel's original units.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from levy_core.data.errors import DataError
from levy_core.data.messages import quote_list

__all__ = ["MAX_SCALED", "ChannelScaler"]

MAX_SCALED: float = 1e12
"""Largest magnitude of a scaled value (a trillion times a channel's training range from
its minimum): the model computes in 32-bit floats (up to ±3.4e38), and its products of
inputs overflow them from about 1e18 on, giving NaN predictions."""


@dataclass
class ChannelScaler:
    """Per-channel min-max scaling, ``(v - min) / (max - min)``.

    Attributes
    ----------
    minimum : dict of str to float
        Channel -> minimum seen at fit time.
    maximum : dict of str to float
        Channel -> maximum seen at fit time; for a constant channel ``minimum + 1`` (so
        its range is 1).
    """

    minimum: dict[str, float]
    maximum: dict[str, float]

    @classmethod
    def fit(cls, frame: pd.DataFrame, series_ids: Iterable[str] | None = None) -> ChannelScaler:
        """Min and max of each channel over some series.

        Parameters
        ----------
        frame : pandas.DataFrame
            Long frame with ``series_id``, ``channel`` and ``value`` (e.g.
            :attr:`Observations.frame`).
        series_ids : iterable of str, optional
            Series to fit on (e.g. the training split); all when omitted.

        Returns
        -------
        ChannelScaler

        Raises
        ------
        DataError
            When the selection holds no observations.
        """
        if series_ids is not None:
            frame = frame[frame["series_id"].isin({str(s) for s in series_ids})]
        if frame.empty:
            raise DataError(
                "Cannot fit the channel scaling: the selected series hold no "
                "observations. Select series with data."
            )
        stats = frame.groupby("channel", sort=True)["value"].agg(["min", "max"])
        lo = stats["min"].astype(float)
        hi = stats["max"].astype(float)
        hi = hi.where(hi > lo, lo + 1.0)
        return cls(
            minimum={str(k): float(v) for k, v in lo.items()},
            maximum={str(k): float(v) for k, v in hi.items()},
        )

    @property
    def channels(self) -> list[str]:
        """Channels known to the scaler, sorted."""
        return sorted(self.minimum)

    def _lookup(
        self, channels: np.ndarray | Sequence[str] | pd.Series
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-row minimum and range; DataError for unseen channels."""
        names = pd.Index(self.channels)
        # factorize first: the lookup then runs once per distinct channel, not per row
        # a Series is factorized as it is stored (Arrow strings: no Python string per row)
        codes, uniques = pd.factorize(channels if isinstance(channels, pd.Series) else np.asarray(channels, dtype=object))
        unique_pos = names.get_indexer(pd.Index(np.asarray(uniques, dtype=object).astype(str)))
        pos = unique_pos[codes]
        if (pos < 0).any():
            unseen = sorted(set(np.asarray(uniques, dtype=object).astype(str)[unique_pos < 0]))
            raise DataError(
                f"Column 'channel' has channel(s) {quote_list(unseen)} that the scaling was "
                f"not fitted on (known: {quote_list(self.channels, 10)}). Fit on data that "
                "includes them, or drop those channels."
            )
        lo = np.array([self.minimum[c] for c in names], dtype=np.float64)
        hi = np.array([self.maximum[c] for c in names], dtype=np.float64)
        return lo[pos], (hi - lo)[pos]

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Rescale ``value`` to ``(v - min) / (max - min)`` of its channel.

        Parameters
        ----------
        frame : pandas.DataFrame
            Long frame with ``channel`` and ``value``.

        Returns
        -------
        pandas.DataFrame
            A copy with the same columns, ``value`` rescaled.

        Raises
        ------
        DataError
            A channel the scaler does not know, or a value more than :data:`MAX_SCALED`
            training ranges away (the model's 32-bit arithmetic would overflow).
        """
        out = frame.copy(deep=False)  # copy-on-write: only the value column is new
        out["value"] = self.check_range(frame)
        return out

    def check_range(self, frame: pd.DataFrame) -> np.ndarray:
        """The scaled values of ``frame`` (``channel``, ``value``, ``series_id``), after
        refusing any more than :data:`MAX_SCALED` training ranges away.

        Raises
        ------
        DataError
            A channel the scaler does not know, or such a value, naming its channel,
            series, the value and the training range.
        """
        lo, rng = self._lookup(frame["channel"])
        raw = frame["value"].to_numpy(dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = (raw - lo) / rng
            far = np.abs(scaled) > MAX_SCALED
        if far.any():
            i = int(np.flatnonzero(far)[0])
            channel = str(frame["channel"].iloc[i])
            raise DataError(
                f"Column 'value': channel {channel!r} has {int(far.sum()):,} value(s) such as {raw[i]:.6g} "
                f"(series {str(frame['series_id'].iloc[i])!r}) more than {MAX_SCALED:.0e} times the range the "
                f"model was trained on ({self.minimum[channel]:.6g} to {self.maximum[channel]:.6g}): the model "
                "computes in 32-bit floating point (up to ±3.4e38), which such a value overflows. Check the "
                "value and its unit, or fit a model on data like it."
            )
        return scaled

    def inverse_value(self, values: np.ndarray, channels: np.ndarray) -> np.ndarray:
        """Scaled values back to original units, ``v * (max - min) + min``.

        Parameters
        ----------
        values : ndarray of float, shape (n,)
        channels : ndarray of str, shape (n,)

        Returns
        -------
        ndarray of float64, shape (n,)
        """
        lo, rng = self._lookup(channels)
        return np.asarray(values, dtype=np.float64) * rng + lo

    def scale_of(self, channels: np.ndarray) -> np.ndarray:
        """``max - min`` per row: multiply a scaled spread by it to get original units.

        Parameters
        ----------
        channels : ndarray of str, shape (n,)

        Returns
        -------
        ndarray of float64, shape (n,)
        """
        return self._lookup(channels)[1]

    def to_dict(self) -> dict[str, dict[str, float]]:
        """JSON-safe ``{"minimum": {...}, "maximum": {...}}``."""
        return {
            "minimum": {k: float(v) for k, v in sorted(self.minimum.items())},
            "maximum": {k: float(v) for k, v in sorted(self.maximum.items())},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Mapping[str, float]]) -> ChannelScaler:
        """Inverse of :meth:`to_dict`."""
        try:
            lo = {str(k): float(v) for k, v in d["minimum"].items()}
            hi = {str(k): float(v) for k, v in d["maximum"].items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(
                f"Not a saved channel scaling ({exc!r}); expected "
                "{'minimum': {...}, 'maximum': {...}}."
            ) from exc
        if set(lo) != set(hi):
            raise DataError(
                "Saved channel scaling lists different channels for minimum and "
                "maximum; re-fit the model."
            )
        bad = sorted(c for c in lo if not (np.isfinite(lo[c]) and np.isfinite(hi[c])
                                           and np.isfinite(hi[c] - lo[c]) and hi[c] > lo[c]))
        if bad:
            raise DataError(
                f"Saved channel scaling of {quote_list(bad)} is not finite numbers with "
                "minimum < maximum (its range would turn every value into inf or NaN); "
                "re-fit the model."
            )
        return cls(minimum=lo, maximum=hi)
