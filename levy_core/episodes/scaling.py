"""Per-channel normalisation of the model's inputs and outputs (`ChannelScaler`).

Fitted on the training series only, saved with the model as plain JSON (no pickle), and
used to put predictions and their spreads back into each channel's original units.

A channel may carry a monotone transform ``g`` (``log``, ``log1p``:
`levy_core.episodes.transforms`), applied before the min-max scaling: the model sees
``(g(v) - min) / (max - min)`` with ``min``/``max`` of ``g(v)``. Values and band ends go
back exactly with ``g⁻¹``; a spread goes back by the delta method at the point prediction
(`ChannelScaler.scale_at`), since for a log channel a spread in data units is not
``(max - min)`` × the normalised spread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from levy_core.data.errors import DataError
from levy_core.data.messages import quote_list
from levy_core.episodes import transforms as tf

__all__ = ["MAX_SCALED", "ChannelScaler"]

MAX_SCALED: float = 1e12
"""Largest magnitude of a scaled value (a trillion times a channel's training range from
its minimum): the model computes in 32-bit floats (up to ±3.4e38), and its products of
inputs overflow them from about 1e18 on, giving NaN predictions."""


@dataclass
class ChannelScaler:
    """Per-channel min-max scaling of the transformed value, ``(g(v) - min) / (max - min)``.

    Attributes
    ----------
    minimum : dict of str to float
        Channel -> minimum of ``g(v)`` seen at fit time.
    maximum : dict of str to float
        Channel -> maximum of ``g(v)`` seen at fit time; for a constant channel
        ``minimum + 1`` (so its range is 1).
    transforms : dict of str to str
        Channel -> ``"log"``, ``"log1p"`` or ``"none"``; a channel not listed has none
        (models saved before transforms existed).
    """

    minimum: dict[str, float]
    maximum: dict[str, float]
    transforms: dict[str, str] = field(default_factory=dict)

    @classmethod
    def fit(cls, frame: pd.DataFrame, series_ids: Iterable[str] | None = None,
            transform: tf.TransformSpec = "none") -> ChannelScaler:
        """Transform (see `resolve_transforms`), then
        min and max of each channel's transformed values over some series.

        Parameters
        ----------
        frame : pandas.DataFrame
            Long frame with ``series_id``, ``channel`` and ``value`` (e.g.
            `Observations.frame`).
        series_ids : iterable of str, optional
            Series to fit on (e.g. the training split); all when omitted.
        transform : str or mapping of str to str
            ``"none"`` (the default), ``"auto"``, ``"log"``, ``"log1p"``, or channel ->
            kind. A value's sign is checked on every series of ``frame``; the automatic
            rule's skewness is measured on the selected series.

        Returns
        -------
        ChannelScaler

        Raises
        ------
        DataError
            When the selection holds no observations, or a forced transform cannot take
            a channel's values (naming the channel and its minimum).
        """
        whole = frame
        if series_ids is not None:
            frame = frame[frame["series_id"].isin({str(s) for s in series_ids})]
        if frame.empty:
            raise DataError(
                "Cannot fit the channel scaling: the selected series hold no "
                "observations. Select series with data."
            )
        names = sorted(str(c) for c in whole["channel"].unique())
        kinds = tf.resolve_transforms(whole, names, transform, training=frame)
        frame = frame.assign(value=cls._warp(frame["value"].to_numpy(np.float64),
                                             frame["channel"].astype(str).map(kinds).fillna("none").to_numpy()))
        stats = frame.groupby("channel", sort=True)["value"].agg(["min", "max"])
        lo = stats["min"].astype(float)
        hi = stats["max"].astype(float)
        hi = hi.where(hi > lo, lo + 1.0)
        return cls(
            minimum={str(k): float(v) for k, v in lo.items()},
            maximum={str(k): float(v) for k, v in hi.items()},
            transforms={c: k for c, k in kinds.items() if c in lo.index and k != "none"},
        )

    @staticmethod
    def _warp(values: np.ndarray, kinds: np.ndarray, back: bool = False) -> np.ndarray:
        """``g`` (or ``g⁻¹`` with ``back``) of each row's kind, float64 (n,)."""
        out = np.asarray(values, np.float64).copy()
        for kind in ("log", "log1p"):
            rows = kinds == kind
            if rows.any():
                out[rows] = (tf.inverse if back else tf.forward)(out[rows], kind)
        return out

    def transform_of(self, channel: str) -> str:
        """The channel's transform: ``"none"``, ``"log"`` or ``"log1p"``."""
        return self.transforms.get(str(channel), "none")

    def transform_note(self) -> str:
        """One line: each channel's transform, e.g. ``"serBilir: log, albumin: none"``."""
        return ", ".join(f"{c}: {self.transform_of(c)}" for c in self.channels)

    @property
    def channels(self) -> list[str]:
        """Channels known to the scaler, sorted."""
        return sorted(self.minimum)

    def _lookup(
        self, channels: np.ndarray | Sequence[str] | pd.Series, *, kinds: bool = False
    ) -> tuple[np.ndarray, ...]:
        """Per-row minimum and range (and, with ``kinds``, transform kind); DataError for
        unseen channels."""
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
        if kinds:
            kind = np.array([self.transform_of(c) for c in names], dtype=object)
            return lo[pos], (hi - lo)[pos], kind[pos]
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
            A channel the scaler does not know, or a value more than `MAX_SCALED`
            training ranges away (the model's 32-bit arithmetic would overflow).
        """
        out = frame.copy(deep=False)  # copy-on-write: only the value column is new
        out["value"] = self.check_range(frame)
        return out

    def check_range(self, frame: pd.DataFrame) -> np.ndarray:
        """The scaled values of ``frame`` (``channel``, ``value``, ``series_id``), after
        refusing any more than `MAX_SCALED` training ranges away.

        Raises
        ------
        DataError
            A channel the scaler does not know, or such a value, naming its channel,
            series, the value and the training range; or a value its channel's transform
            cannot take (≤ 0 for log, < 0 for log1p), naming the channel and the minimum.
        """
        raw = frame["value"].to_numpy(dtype=np.float64)
        if self.transforms:  # no per-row kinds when no channel has a transform (the common, hot case)
            lo, rng, kind = self._lookup(frame["channel"], kinds=True)
            self._check_domain(frame, raw, kind)
            raw = self._warp(raw, kind)
        else:
            lo, rng = self._lookup(frame["channel"])
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

    def _check_domain(self, frame: pd.DataFrame, raw: np.ndarray, kind: np.ndarray) -> None:
        """DataError naming the first channel whose values its transform cannot take."""
        bad = ((kind == "log") & (raw <= 0)) | ((kind == "log1p") & (raw < 0))
        if not bad.any():
            return
        channel = str(frame["channel"].iloc[int(np.flatnonzero(bad)[0])])
        rows = bad & (frame["channel"].astype(str).to_numpy() == channel)
        k = self.transform_of(channel)
        raise DataError(
            f"Column 'value': channel {channel!r} has {int(rows.sum()):,} value(s) {'≤' if k == 'log' else '<'} 0 "
            f"(minimum {raw[rows].min():.6g}), but the model was fitted with its {k} transform, which needs every "
            f"value {'> 0' if k == 'log' else '≥ 0'}. Check the values, or refit with --transform "
            f"{channel}={'log1p' if k == 'log' and raw[rows].min() == 0 else 'none'}.")

    def normalise(self, values: np.ndarray, channels: np.ndarray) -> np.ndarray:
        """Original values to the model's scale, ``(g(v) - min) / (max - min)`` (no checks).

        Parameters
        ----------
        values : ndarray of float, shape (n,)
        channels : ndarray of str, shape (n,)

        Returns
        -------
        ndarray of float64, shape (n,)
        """
        lo, rng, kind = self._lookup(channels, kinds=True)
        return (self._warp(values, kind) - lo) / rng

    def normalise_codes(self, values: np.ndarray, codes: np.ndarray, channels: Sequence[str]) -> np.ndarray:
        """`normalise` with each row's channel given as an index into ``channels``, (n,)."""
        lo = np.array([self.minimum[c] for c in channels], np.float64)[codes]
        span = np.array([self.maximum[c] - self.minimum[c] for c in channels], np.float64)[codes]
        kind = np.array([self.transform_of(c) for c in channels], dtype=object)[codes]
        return (self._warp(values, kind) - lo) / span

    def inverse_value(self, values: np.ndarray, channels: np.ndarray) -> np.ndarray:
        """Scaled values back to original units, ``g⁻¹(v * (max - min) + min)``: exact for
        a value or a band end (``g`` is increasing).

        Parameters
        ----------
        values : ndarray of float, shape (n,)
        channels : ndarray of str, shape (n,)

        Returns
        -------
        ndarray of float64, shape (n,)
        """
        if not self.transforms:
            lo, rng = self._lookup(channels)
            return np.asarray(values, dtype=np.float64) * rng + lo
        lo, rng, kind = self._lookup(channels, kinds=True)
        return self._warp(np.asarray(values, dtype=np.float64) * rng + lo, kind, back=True)

    def scale_at(self, values: np.ndarray, channels: np.ndarray) -> np.ndarray:
        """The local scale at a scaled value ``v``: ``(max - min) · dg⁻¹/du`` at
        ``u = v (max - min) + min``; multiply a scaled spread centred at ``v`` by it to get
        original units (the delta method: ``(max - min) · exp(u)`` for a log or log1p
        channel, ``max - min`` — `scale_of` — otherwise).

        Parameters
        ----------
        values : ndarray of float, shape (n,)
            Scaled centres (the point predictions).
        channels : ndarray of str, shape (n,)

        Returns
        -------
        ndarray of float64, shape (n,)
        """
        lo, rng, kind = self._lookup(channels, kinds=True)
        out = rng.copy()
        for k in ("log", "log1p"):
            rows = kind == k
            if rows.any():
                u = np.asarray(values, np.float64)[rows] * rng[rows] + lo[rows]
                out[rows] = rng[rows] * tf.inverse_slope(u, k)
        return out

    def scale_of(self, channels: np.ndarray) -> np.ndarray:
        """``max - min`` per row: multiply a scaled spread by it to get the transformed
        units (original units for a channel without transform; see `scale_at`).

        Parameters
        ----------
        channels : ndarray of str, shape (n,)

        Returns
        -------
        ndarray of float64, shape (n,)
        """
        return self._lookup(channels)[1]

    def to_dict(self) -> dict[str, dict[str, float] | dict[str, str]]:
        """JSON-safe ``{"minimum": {...}, "maximum": {...}, "transform": {...}}`` (every
        channel's transform kind)."""
        return {
            "minimum": {k: float(v) for k, v in sorted(self.minimum.items())},
            "maximum": {k: float(v) for k, v in sorted(self.maximum.items())},
            "transform": {k: self.transform_of(k) for k in self.channels},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Mapping[str, float] | Mapping[str, str]]) -> ChannelScaler:
        """Inverse of `to_dict`; a scaling saved before transforms existed (no
        ``"transform"``) has none on every channel."""
        try:
            lo = {str(k): float(v) for k, v in d["minimum"].items()}
            hi = {str(k): float(v) for k, v in d["maximum"].items()}
            kinds = {str(k): str(v) for k, v in d.get("transform", {}).items()}
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
        wrong = sorted(c for c, k in kinds.items() if c not in lo or k not in tf.KINDS)
        if wrong:
            raise DataError(
                f"Saved channel scaling gives {quote_list(wrong)} a transform that is not one of "
                f"{quote_list(list(tf.KINDS))} or a channel it does not scale; re-fit the model."
            )
        return cls(minimum=lo, maximum=hi, transforms={c: k for c, k in kinds.items() if k != "none"})
