"""The season of a few series: the lag at which their changes repeat.

A fit on rolling origins (one series or a few) may carry a season in its deterministic
offset (``ModelConfig.season``: the value one season before the query, the seasonal naive
forecast, in place of the last value). `detect_season` finds it from the training
part: each channel is put on a regular grid at the median sampling interval, differenced
(a trend would otherwise dominate the autocorrelation; cells are at least a hundredth of the
longest period looked for, so that each averages several noisy observations) and its autocorrelation averaged
over the channels; the season is the shortest lag whose local maximum rises from the trough before it by
``FIRST_PEAK_SHARE`` of the largest such rise (a season's multiples repeat it too), between ``MIN_PERIOD_GAPS`` sampling
intervals and ``max_period``, and only when that autocorrelation clears both
``MIN_AUTOCORRELATION`` and ``NOISE_SE`` standard errors of an autocorrelation of white
noise (``1/√n``: with many lags tested, chance peaks of 2 s.e. are common). A period within
8 % of a calendar one (a day, a week, a month, a year) is taken to be that one: the grid
only resolves it to a sampling interval.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = ["FIRST_PEAK_SHARE", "MIN_AUTOCORRELATION", "MIN_PERIOD_GAPS", "NOISE_SE", "autocorrelation",
           "calendar_power", "candidate_periods", "detect_season", "false_alarm", "harmonics_f_test",
           "lag_one_autocorrelation", "periodogram_peak", "red_noise", "red_noise_peak", "RedNoise", "snap_to_calendar"]

MIN_AUTOCORRELATION = 0.2  # below this the repetition is too weak to forecast from
MIN_PERIOD_GAPS = 3  # a season spans at least this many sampling intervals
FIRST_PEAK_SHARE = 0.8  # the first peak this close to the highest is the season
NOISE_SE = 4.0  # standard errors of a white-noise autocorrelation a season must clear
MAX_GRID = 20_000  # grid points per channel (coarser grids beyond)
CALENDAR = (24.0, 168.0, 365.2425 * 24)  # a day, a week, a year (hours): tried where the data resolve and show them
MIN_SAMPLES_PER_PERIOD = 4  # a period spans at least this many sampling intervals
MAX_PERIODS = 3
MIN_CYCLES = 3  # a period found by search (not a calendar one) repeats at least this often in the history
CALENDAR_HARMONICS = 3  # a calendar period is tried where its fundamental or one of these harmonics shows
FALSE_ALARM = 0.01  # a periodogram peak is a period when noise would rise this high this rarely
GRID_PER_PERIOD = 100  # grid cells over the longest period looked for
CALENDAR_PERIODS = (1.0, 12.0, 24.0, 168.0, 365.2425 * 24 / 12, 365.2425 * 24)  # hour … month, year
CALENDAR_TOLERANCE = 0.08  # a detected period this close to one of them is that one


def autocorrelation(x: np.ndarray, max_lag: int) -> np.ndarray:
    """Sample autocorrelation of ``x`` (n,) at lags 0..max_lag, ignoring NaN pairs."""
    x = np.asarray(x, dtype=np.float64)
    x = x - np.nanmean(x)
    var = np.nanmean(x * x)
    out = np.full(max_lag + 1, np.nan)
    if not var > 0:
        return out
    for lag in range(max_lag + 1):
        a, b = x[: len(x) - lag], x[lag:]
        ok = np.isfinite(a) & np.isfinite(b)
        if ok.sum() >= 10:
            out[lag] = float(np.mean(a[ok] * b[ok]) / var)
    return out


def _gridded(times: np.ndarray, values: np.ndarray, step: float) -> np.ndarray:
    """``values`` averaged in the cells of a regular grid of ``step`` (NaN where no
    observation falls in a cell: gaps are not interpolated)."""
    cells = np.floor((times - times.min()) / step).astype(np.int64)
    grid = np.full(int(cells.max()) + 1, np.nan)
    sums = np.bincount(cells, weights=values, minlength=grid.size)
    counts = np.bincount(cells, minlength=grid.size)
    grid[counts > 0] = sums[counts > 0] / counts[counts > 0]
    return grid


def _gridded_changes(times: np.ndarray, values: np.ndarray, step: float) -> np.ndarray:
    """First differences of ``values`` on a regular grid of ``step`` (`_gridded`)."""
    return np.diff(_gridded(times, values, step))


def detect_season(frame: pd.DataFrame, max_period: float) -> float | None:
    """The season (hours) of the series in ``frame`` (columns series_id, channel, time,
    value), or None when their changes do not repeat clearly within ``max_period``."""
    times = frame[["series_id", "time"]].drop_duplicates().sort_values(["series_id", "time"])
    gaps = times.groupby("series_id")["time"].diff().to_numpy()
    gaps = gaps[np.isfinite(gaps) & (gaps > 0)]
    if not gaps.size or not max_period > 0:
        return None
    span = float(frame["time"].max() - frame["time"].min())
    # cells averaging several observations: differences of single noisy observations a few
    # minutes apart would drown any season (GRID_PER_PERIOD cells still resolve it)
    step = max(float(np.median(gaps)), max_period / GRID_PER_PERIOD, span / MAX_GRID)
    max_lag = int(max_period / step)
    if max_lag < MIN_PERIOD_GAPS + 1:
        return None
    curves, n_changes = [], 0
    for _, g in frame.groupby(["series_id", "channel"]):
        if len(g) >= 4 * MIN_PERIOD_GAPS:
            changes = _gridded_changes(g["time"].to_numpy(), g["value"].to_numpy(), step)
            curves.append(autocorrelation(changes, max_lag))
            n_changes += int(np.isfinite(changes).sum())
    if not curves:
        return None
    stacked = np.vstack(curves)
    counts = np.isfinite(stacked).sum(axis=0)  # lags with too few pairs in every channel stay NaN
    acf = np.where(counts > 0, np.nansum(stacked, axis=0) / np.maximum(counts, 1), np.nan)
    threshold = max(MIN_AUTOCORRELATION, NOISE_SE / np.sqrt(max(n_changes, 1)))
    peaks = [lag for lag in range(MIN_PERIOD_GAPS, max_lag)
             if acf[lag] >= acf[lag - 1] and acf[lag] >= acf[lag + 1] and acf[lag] >= threshold]
    if not peaks:
        return None
    # a season's peak rises from a trough half a season before (a smooth signal's changes
    # also correlate over a few lags, without any trough): rank peaks by that rise
    rise = {lag: float(acf[lag] - np.nanmin(acf[1:lag])) for lag in peaks}
    highest = max(rise.values())
    first = next(lag for lag in peaks if rise[lag] >= FIRST_PEAK_SHARE * highest)
    return snap_to_calendar(first * step)


def snap_to_calendar(period: float) -> float:
    """A detected period (hours) on a grid of sampling intervals, snapped to the calendar
    period it approximates (a day, a week, a year, …) when within ``CALENDAR_TOLERANCE``."""
    nearest = min(CALENDAR_PERIODS, key=lambda p: abs(np.log(period / p)))
    return float(nearest) if abs(period / nearest - 1) <= CALENDAR_TOLERANCE else float(period)


# ---------------------------------------------------------------------------------------
# candidate periods of the base forecast (levy_core.offsets.base_forecast): calendar ones and a
# Lomb–Scargle peak, for irregular times and missing points


def median_gap(times: np.ndarray) -> float:
    gaps = np.diff(np.unique(times))
    return float(np.median(gaps)) if gaps.size else 0.0


def _detrended(times: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Centred times and the values less their least-squares line (the periodograms'
    input: a trend would otherwise swamp the low frequencies); None for a constant."""
    t = times - times.mean()
    y = values - np.polyval(np.polyfit(t, values, 1), t)
    return (t, y) if np.var(y) > 0 else None


def _search(times: np.ndarray, values: np.ndarray, gap: float,
            cycles: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """What a periodogram search of one channel runs on: centred times, the values less their
    line, 1,500 periods (hours, geometric) from ``MIN_SAMPLES_PER_PERIOD`` sampling intervals
    to the span over ``cycles``, and the span; None with under 16 points, a constant, or no
    such period."""
    span = float(times.max() - times.min()) if times.size else 0.0
    if times.size < 16 or not span > 0 or not gap > 0:
        return None
    longest, shortest = span / cycles, MIN_SAMPLES_PER_PERIOD * gap
    if not longest > shortest:
        return None
    detrended = _detrended(times, values)
    if detrended is None:
        return None
    return *detrended, np.geomspace(shortest, longest, 1500), span


def periodogram_peak(times: np.ndarray, values: np.ndarray, gap: float) -> tuple[float, float] | None:
    """The strongest period (hours) of a Lomb–Scargle periodogram of one channel after a
    linear trend is removed, and its normalised power in [0, 1]; None when the span holds
    fewer than two periods of anything resolvable."""
    from scipy.signal import lombscargle

    search = _search(times, values, gap, 2)
    if search is None:
        return None
    t, y, periods, _ = search
    power = lombscargle(t, y, 2 * np.pi / periods, normalize=True)
    best = int(np.argmax(power))
    return float(periods[best]), float(power[best])


def calendar_power(times: np.ndarray, values: np.ndarray, period: float,
                   red: RedNoise | None = None) -> float | None:
    """The normalised Lomb–Scargle power of one channel (after a linear trend is removed)
    at a calendar ``period`` (hours) fixed in advance, or None when neither it nor its
    first ``CALENDAR_HARMONICS − 1`` harmonics rise above what white noise gives with
    probability ``FALSE_ALARM`` (Bonferroni over the harmonics tried), nor do they together
    (`harmonics_f_test`), and, given the channel's red-noise null ``red``
    (`red_noise`), above what red noise gives there with that probability too (one of
    them, or their sum).

    A calendar period is a hypothesis, not a finding: a week in daily temperatures or a
    year in seasonally adjusted figures carries no variance, and its Fourier terms and
    seasonal candidates would only fit noise. A persistent series (a random walk) clears the
    white-noise test at a week of hourly data or a year of weekly data most of the time; red
    noise does not. A weekday pattern (a square wave) shows at its fundamental or at a
    harmonic; testing a few covers both."""
    from scipy.signal import lombscargle
    from scipy.special import gammaincc

    detrended = _detrended(times, values) if times.size >= 16 else None
    if detrended is None:
        return None
    t, y = detrended
    freqs = 2 * np.pi * np.arange(1, CALENDAR_HARMONICS + 1) / period
    power = np.clip(np.atleast_1d(lombscargle(t, y, freqs, normalize=True)), 0.0, 1.0)
    # one frequency fixed in advance: P(z > p) = (1 − p)^((n − 3)/2) (Scargle 1982)
    shown = bool(np.any(CALENDAR_HARMONICS * (1.0 - power) ** max((times.size - 3) / 2, 0.5) < FALSE_ALARM))
    shown = shown or harmonics_f_test(t, y, freqs) < FALSE_ALARM
    if red is not None:  # and P(z > z0) = e^(−z0) for the periodogram over the AR(1) spectrum
        z = red.z(power, freqs)
        # the sum of K such independent exponentials is Gamma(K, 1): the harmonics jointly
        shown &= bool(np.any(CALENDAR_HARMONICS * np.exp(-z) < FALSE_ALARM)) or float(
            gammaincc(len(freqs), float(np.sum(z)))) < FALSE_ALARM
    return float(power[0]) if shown else None


def harmonics_f_test(t: np.ndarray, y: np.ndarray, omega: np.ndarray) -> float:
    """The p-value of the F-test that the ``sin/cos`` terms at angular frequencies ``omega``
    (rad/h) together explain none of ``y`` (n,) at times ``t`` (n,) beyond a line: the test of
    the seasonal block of a harmonic regression, exact for Gaussian white noise (1.0 with
    too few points to say).

    A season spreads its variance over its harmonics. Where a persistent cycle (a business
    cycle under a monthly index) holds most of the variance, no single harmonic explains a
    large enough share to clear the white-noise test, though together they are clear: the
    monthly equipment orders of ``benchmarks/anchors.py`` with 30 % of months dropped lost
    their year at four end points of six, at three of which the three harmonics together
    were clear (p 0.003-0.007; the best single harmonic's 0.015-0.028)."""
    from scipy.stats import f as f_distribution

    design = np.column_stack([np.ones_like(t), t] + [fn(w * t) for w in omega for fn in (np.sin, np.cos)])
    extra, residual_dof = 2 * len(omega), len(t) - design.shape[1]
    if residual_dof < 5:
        return 1.0
    line = y - design[:, :2] @ np.linalg.lstsq(design[:, :2], y, rcond=None)[0]
    full = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    rss_line, rss_full = float(line @ line), float(full @ full)
    if not rss_full > 0:
        return 0.0 if rss_line > 0 else 1.0
    return float(f_distribution.sf((rss_line - rss_full) / extra / (rss_full / residual_dof), extra, residual_dof))


def false_alarm(power: float, n: int, span: float, shortest: float) -> float:
    """Probability that white noise gives a normalised Lomb–Scargle peak at least ``power``
    somewhere among the about ``span / shortest`` independent frequencies searched
    (Scargle 1982; the standard normalisation: ``P(z > p) = (1 − p)^((n − 3)/2)`` at one
    frequency)."""
    one = (1.0 - min(max(power, 0.0), 1.0)) ** max((n - 3) / 2, 0.5)
    independent = max(span / max(shortest, 1e-12), 1.0)
    return float(-np.expm1(independent * np.log1p(-min(one, 1 - 1e-16))))


def lag_one_autocorrelation(times: np.ndarray, values: np.ndarray, step: float) -> float:
    """The lag-one autocorrelation of one channel on a regular grid of ``step`` (cells
    averaged, empty cells skipped), clipped to [0, 0.99]: the AR(1) coefficient of the
    red-noise background a period must stand out from (0 for too few pairs)."""
    grid = _gridded(times, values, step)
    rho = autocorrelation(grid, 1)[1] if grid.size > 1 else np.nan
    return float(np.clip(rho, 0.0, 0.99)) if np.isfinite(rho) else 0.0


class RedNoise(NamedTuple):
    """One channel's red-noise null (`red_noise`): the AR(1) coefficient ``rho`` on the
    grid of ``step`` hours and the ``scale`` that makes the periodogram over its spectrum a
    unit exponential on the searched periods."""

    rho: float
    step: float
    scale: float

    def z(self, power: np.ndarray, omega: np.ndarray) -> np.ndarray:
        """The normalised periodogram ``power`` at angular frequencies ``omega`` (rad/h) over
        the AR(1) spectrum, in units of the null's: exponential with mean 1 under it."""
        background = (1 - self.rho**2) / (1 - 2 * self.rho * np.cos(omega * self.step) + self.rho**2)
        return power / background / self.scale


def red_noise(times: np.ndarray, values: np.ndarray, gap: float) -> tuple[RedNoise, np.ndarray, np.ndarray] | None:
    """The red-noise null of one channel, with the periods searched (hours, from
    ``MIN_SAMPLES_PER_PERIOD`` sampling intervals to the span over ``MIN_CYCLES``) and the
    normalised periodogram there; None as [`periodogram_peak`][levy_core.offsets.seasonality.periodogram_peak].

    A persistent series -- a share price, an interest rate, employment through a business
    cycle -- has most of its variance at low frequencies with no period at all, and the
    strongest periodogram peak of such a series clears the white-noise test
    ([`false_alarm`][levy_core.offsets.seasonality.false_alarm]) almost always: at one of the first three end points of
    ``benchmarks/anchors.py`` it proposed "periods" of 2.5 to 24 years (2 to 5 cycles in the
    history) on all 20 economic series of the development and fresh sets, and a harmonic
    fitted at one of them (6.7 years in a monthly equipment index) forecast 4× worse than
    the seasonal naive value. The null here is an AR(1) process with
    the channel's own lag-one autocorrelation ``ρ`` on the sampling grid (REDFIT's, Schulz
    & Mudelsee 2002): its spectrum ``R(ω) ∝ (1 − ρ²) / (1 − 2ρ cos ωΔ + ρ²)``, to which the
    periodogram divided, ``z = P/R``, is exponential with mean 1 (scaled here by its median
    over the searched periods, ``ln 2``: robust to a peak)."""
    from scipy.signal import lombscargle

    search = _search(times, values, gap, MIN_CYCLES)
    if search is None:
        return None
    t, y, periods, span = search
    power = lombscargle(t, y, 2 * np.pi / periods, normalize=True)
    step = max(gap, span / MAX_GRID)  # the grid ρ is measured on (at most MAX_GRID cells)
    unscaled = RedNoise(lag_one_autocorrelation(times, y, step), step, 1.0)
    scale = float(np.median(unscaled.z(power, 2 * np.pi / periods))) / np.log(2.0)
    return (RedNoise(unscaled.rho, step, scale), periods, power) if scale > 0 else None


def red_noise_peak(times: np.ndarray, values: np.ndarray, gap: float,
                   null: tuple[RedNoise, np.ndarray, np.ndarray] | None = None) -> tuple[float, float, float] | None:
    """The period (hours) that stands out most from a red-noise background (`red_noise`),
    with its normalised Lomb–Scargle power and the probability that red noise rises that far
    above its own spectrum at some searched frequency, ``1 − (1 − e^{−z})^M`` over the
    ``M ≈ span / shortest`` independent frequencies; None as [`periodogram_peak`][levy_core.offsets.seasonality.periodogram_peak]. The
    periods searched repeat at least ``MIN_CYCLES`` times in the history (``null``: what
    `red_noise` gave for this channel, to spare computing it again)."""
    found = null if null is not None else red_noise(times, values, gap)
    if found is None:
        return None
    red, periods, power = found
    z = red.z(power, 2 * np.pi / periods)
    best = int(np.argmax(z))
    independent = max(float(times.max() - times.min()) / float(periods[0]), 1.0)
    chance = float(-np.expm1(independent * np.log1p(-min(float(np.exp(-z[best])), 1 - 1e-16))))
    return float(periods[best]), float(power[best]), chance


def candidate_periods(frame: pd.DataFrame) -> tuple[float, ...]:
    """The periods (hours) worth trying on ``frame`` (columns series_id, channel, time,
    value): the calendar periods its sampling and span resolve and its values show above
    white and red noise (`calendar_power`, or a shown shorter period divides them), and each channel's
    periodogram peak that stands out from a red-noise background (`red_noise_peak`)
    and explains a share of the variance white noise reaches with probability below
    ``FALSE_ALARM`` ([`false_alarm`][levy_core.offsets.seasonality.false_alarm]), snapped to the calendar; at most ``MAX_PERIODS``,
    the strongest evidence first."""
    found: dict[float, float] = {}
    unshown: set[float] = set()  # calendar periods resolved but not shown by the values
    for _, g in frame.groupby(["series_id", "channel"], sort=True):
        times, values = g["time"].to_numpy(np.float64), g["value"].to_numpy(np.float64)
        gap = median_gap(times)
        if not gap > 0:
            continue
        span = float(times.max() - times.min())
        null = red_noise(times, values, gap)
        for p in CALENDAR:
            if p >= MIN_SAMPLES_PER_PERIOD * gap and span >= 2 * p:
                power = calendar_power(times, values, p, null[0] if null is not None else None)
                if power is not None:
                    found[p] = max(found.get(p, 0.0), power)
                else:
                    unshown.add(p)
        peak = red_noise_peak(times, values, gap, null) if null is not None else None
        # above the red-noise background, and a share of the variance white noise rarely gives
        if (peak is not None and peak[2] < FALSE_ALARM
                and false_alarm(peak[1], len(times), span, MIN_SAMPLES_PER_PERIOD * gap) < FALSE_ALARM):
            p = snap_to_calendar(peak[0])
            found[p] = max(found.get(p, 0.0), peak[1])
    # a week of hourly data is kept without a weekly signal of its own where the day is shown:
    # its harmonics (the 7th is the day) carry a daily cycle that differs between weekdays
    for p in unshown - set(found):
        if any(q < p and abs(p / q - round(p / q)) < 1e-9 for q in found):
            found[p] = 0.0
    ranked = sorted(found, key=lambda p: (-found[p], p))
    return tuple(float(p) for p in ranked[:MAX_PERIODS])
