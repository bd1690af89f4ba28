"""What a fit records of its offset: which classical forecaster each channel's ``b(q)`` is, and
its fitted parameters ([`BaseForecastSpec`][levy_core.offsets.spec.BaseForecastSpec], saved in the model file). The forecasters
themselves and the choice between them: [`levy_core.offsets.base_forecast`][levy_core.offsets.base_forecast]."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from levy_core.data.durations import say_duration
from levy_core.offsets import smoothing
from levy_core.offsets.gp import GPSpec
from levy_core.offsets.seasonality import MAX_PERIODS

__all__ = ["COMBINED", "HARMONIC", "HARMONIC_AR", "MAX_AR_ORDER", "MAX_MEMBERS", "METHODS", "SEASONAL", "BaseForecastSpec"]

# in order of complexity: a candidate is kept over a simpler one only when it is clearly better
METHODS = ("last", "level", "drift", "damped_trend", "holt", "seasonal", "seasonal_drift", "autoregressive", "harmonic_level", "harmonic",
           "harmonic_recent", "harmonic_level_ar", "harmonic_ar", "harmonic_recent_ar", "gp", "combination")
COMBINED = 3  # a combination averages this many of the best candidates
MAX_MEMBERS = 64  # a bagged choice (levy_core.offsets.bagging) weighs at most this many candidates
HARMONIC = ("harmonic", "harmonic_level", "harmonic_recent")
HARMONIC_AR = tuple(f"{m}_ar" for m in HARMONIC)  # the same, plus an AR(p) of their residuals
SEASONAL = ("seasonal", "seasonal_drift")
MAX_AR_ORDER = 30


@dataclass(frozen=True)
class BaseForecastSpec:
    """Which forecaster each channel's offset is, recorded with the model.

    Attributes
    ----------
    methods : dict of str to str
        Channel name → one of ``METHODS``.
    periods : dict of str to float
        Channel name → the period (hours) of a ``seasonal``/``seasonal_drift`` method (0 for
        the others).
    harmonics : tuple of float
        Periods (hours) of the harmonic regressors (empty: none).
    gap : float
        The data's median sampling interval (hours): the level's half-life unit and the
        autoregression's step.
    orders : dict of str to int
        Channel name → the order of its ``autoregressive`` candidate (0: none).
    members : dict of str to list of (str, float)
        Channel name → the (method, period) pairs a ``combination`` averages.
    weights : dict of str to list of float
        Channel name → the weight of each of its ``members`` (> 0, summing to 1): how often
        each won the bagged choice; a channel without weights averages its members equally.
    scores : dict of str to dict of str to float
        Channel → candidate → its mean squared error on the training origins (normalised
        units), as measured when the choice was made (for the fit's report).
    gp : dict of str to GPSpec
        Channel → its Gaussian process's fitted kernel (channels with a ``gp`` candidate).
    smoothing : dict of str to (float, float, float)
        Channel → the ``(α, β, φ)`` of its ``damped_trend`` candidate.
    holt : dict of str to (float, float, float)
        Channel → the ``(α, β, 1)`` of its ``holt`` candidate.
    """

    methods: dict[str, str]
    periods: dict[str, float]
    harmonics: tuple[float, ...]
    gap: float
    orders: dict[str, int] = field(default_factory=dict)
    members: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    gp: dict[str, GPSpec] = field(default_factory=dict)
    smoothing: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    holt: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    weights: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for channel, method in self.methods.items():
            if method not in METHODS:
                raise ValueError(f"base forecast: unknown method {method!r} for channel {channel!r}; "
                                 f"expected one of {METHODS}")
        numbers = [self.gap, *self.harmonics, *self.periods.values()]
        if not all(isinstance(x, (int, float)) and math.isfinite(x) and 0 <= x <= 1e7 for x in numbers):
            raise ValueError("base forecast: gap, periods and harmonics must be finite hours in [0, 1e7]")
        if not self.gap > 0:
            raise ValueError("base forecast: the sampling interval must be > 0")
        if len(self.harmonics) > MAX_PERIODS or any(p <= 0 for p in self.harmonics):
            raise ValueError(f"base forecast: at most {MAX_PERIODS} harmonic periods, each > 0")
        for channel, pairs in self.members.items():
            if not 2 <= len(pairs) <= MAX_MEMBERS or any(m not in METHODS or m == "combination" for m, _ in pairs):
                raise ValueError(f"base forecast: channel {channel!r} combines 2 to {MAX_MEMBERS} known methods")
            numbers += [p for _, p in pairs]
        for channel, weights in self.weights.items():
            n = len(self.members.get(channel, ()))
            if (len(weights) != n or not all(isinstance(w, (int, float)) and math.isfinite(w) and w > 0 for w in weights)
                    or abs(sum(weights) - 1.0) > 1e-6):
                raise ValueError(f"base forecast: channel {channel!r} needs one weight > 0 per member, summing to 1")
        if any(m == "combination" and c not in self.members for c, m in self.methods.items()):
            raise ValueError("base forecast: a combination needs its members")
        if not all(isinstance(x, (int, float)) and math.isfinite(x) and 0 <= x <= 1e7 for x in numbers):
            raise ValueError("base forecast: periods must be finite hours in [0, 1e7]")
        uses_gp = {c for c, m in self.methods.items() if m == "gp"} | {
            c for c, pairs in self.members.items() if any(m == "gp" for m, _ in pairs)}
        for params in [*self.smoothing.values(), *self.holt.values()]:
            smoothing.check_parameters(*params)
        uses_holt = {c for c, m in self.methods.items() if m == "holt"} | {
            c for c, pairs in self.members.items() if any(m == "holt" for m, _ in pairs)}
        if uses_holt - set(self.holt):
            raise ValueError(f"base forecast: channels {sorted(uses_holt - set(self.holt))} use Holt's trend "
                             "without its smoothing parameters")
        if uses_gp - set(self.gp):
            raise ValueError(f"base forecast: channels {sorted(uses_gp - set(self.gp))} use a Gaussian "
                             "process without its kernel")
        if not all(isinstance(k, int) and 0 <= k <= MAX_AR_ORDER for k in self.orders.values()):
            raise ValueError(f"base forecast: autoregressive orders must be whole numbers in [0, {MAX_AR_ORDER}]")

    def to_dict(self) -> dict:
        return {"methods": dict(self.methods), "periods": dict(self.periods), "harmonics": list(self.harmonics),
                "gap": self.gap, "orders": dict(self.orders),
                "members": {c: [[m, p] for m, p in pairs] for c, pairs in self.members.items()}, "scores": {c: dict(s) for c, s in self.scores.items()},
                "gp": {c: g.to_dict() for c, g in self.gp.items()},
                "smoothing": {c: list(v) for c, v in self.smoothing.items()},
                "holt": {c: list(v) for c, v in self.holt.items()},
                "weights": {c: list(w) for c, w in self.weights.items()}}

    @classmethod
    def from_dict(cls, data: dict) -> BaseForecastSpec:
        unknown = sorted(set(data) - {"methods", "periods", "harmonics", "gap", "orders", "members", "scores", "gp",
                                      "smoothing", "holt", "weights"})
        if unknown:
            raise ValueError(f"base forecast: unknown keys {unknown}")
        try:
            return cls({str(k): str(v) for k, v in dict(data["methods"]).items()},
                       {str(k): float(v) for k, v in dict(data.get("periods", {})).items()},
                       tuple(float(p) for p in data.get("harmonics", [])), float(data["gap"]),
                       {str(k): int(v) for k, v in dict(data.get("orders", {})).items()},
                       {str(c): [(str(m), float(p)) for m, p in list(pairs)[:MAX_MEMBERS + 1]]
                        for c, pairs in dict(data.get("members", {})).items()},
                       {str(c): {str(k): float(v) for k, v in dict(s).items()}
                        for c, s in dict(data.get("scores", {})).items()},
                       {str(c): GPSpec.from_dict(dict(g)) for c, g in dict(data.get("gp", {})).items()},
                       {str(c): tuple(float(x) for x in list(v)[:3])
                        for c, v in dict(data.get("smoothing", {})).items()},
                       {str(c): tuple(float(x) for x in list(v)[:3])
                        for c, v in dict(data.get("holt", {})).items()},
                       {str(c): [float(x) for x in list(w)[:MAX_MEMBERS + 1]]
                        for c, w in dict(data.get("weights", {})).items()})
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"base forecast: malformed record ({exc})") from exc

    def describe(self, clock: str | None = "hours") -> str:
        """One line per channel, e.g. ``co2: harmonic (1 year)``: periods in the data's
        ``clock`` (`say_duration`; "days" says 365 days, None
        or "datetime" calendar lengths)."""
        out = []
        for channel, method in sorted(self.methods.items()):
            what = method
            if method == "combination" and channel in self.weights:
                what = "weighted mean of " + ", ".join(
                    f"{self._label(channel, m, p, clock)} ({w:.0%})"
                    for (m, p), w in zip(self.members[channel], self.weights[channel], strict=True))
            elif method == "combination":
                what = "mean of " + ", ".join(self._label(channel, m, p, clock) for m, p in self.members[channel])
            elif method in SEASONAL:
                what += f" ({say_duration(self.periods.get(channel, 0), clock)})"
            elif method == "autoregressive":
                what += f" (order {self.orders.get(channel, 0)})"
            elif method == "gp":
                what = self._label(channel, method, 0.0, clock)
            elif method in HARMONIC_AR:
                what = self._label(channel, method, 0.0, clock)
            elif method in HARMONIC and not self.harmonics:
                what = "trend" if method == "harmonic" else "recent trend"
            elif method in HARMONIC and self.harmonics:
                what += " (" + ", ".join(say_duration(p, clock) for p in self.harmonics) + ")"
            out.append(f"{channel}: {what}")
        return "; ".join(out)

    def _label(self, channel: str, method: str, period: float, clock: str | None) -> str:
        if method in SEASONAL:
            return f"{method} ({say_duration(period, clock)})"
        if method == "autoregressive":
            return f"{method} (order {self.orders.get(channel, 0)})"
        if method in HARMONIC_AR:
            base = method.removesuffix("_ar")
            shape = (("trend" if base == "harmonic" else "recent trend") if not self.harmonics else
                     base + " (" + ", ".join(say_duration(p, clock) for p in self.harmonics) + ")")
            return f"{shape} + AR residuals"
        if method == "gp":
            kernel = self.gp.get(channel)
            periods = ", ".join(say_duration(p, clock) for p in kernel.periods) if kernel else ""
            return "Gaussian process" + (f" ({periods})" if periods else "")
        return method
