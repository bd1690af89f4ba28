"""Regenerate the bundled sample data sets (see README.md in this folder).

Usage, from the repository root::

    python sample_data/make_samples.py [PHYSIONET_LONG_CSV_GZ]

The PhysioNet 2012 set A long file is only read to cut out the 300-patient sample; when
it is missing that sample is left as it is and the other files are still regenerated.
Every output is deterministic (fixed seeds, gzip without a time stamp).
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from levy_core.data.synthetic import make_synthetic  # noqa: E402

# The full set A is not shipped: pass its path, or set LEVY_PHYSIONET_LONG_CSV.
DEFAULT_PHYSIONET = os.environ.get("LEVY_PHYSIONET_LONG_CSV", "set-a-long.csv.gz")
PHYSIONET_SEED = 2012
PHYSIONET_PATIENTS = 300
SYNTHETIC_SEED = 0
SYNTHETIC_SERIES = 40
SENSOR_SEED = 7


def make_physionet_sample(source: Path, out: Path) -> None:
    """300 patients of set A, drawn with a seeded generator; rows and text unchanged."""
    df = pd.read_csv(source, dtype=str, keep_default_na=False)
    expected = ["patient_id", "time_hours", "parameter", "value"]
    if list(df.columns) != expected:
        raise SystemExit(f"{source}: expected columns {expected}, got {list(df.columns)}")
    ids = sorted(df["patient_id"].unique(), key=int)
    rng = np.random.default_rng(PHYSIONET_SEED)
    chosen = set(
        rng.choice(np.array(ids, dtype=object), size=PHYSIONET_PATIENTS, replace=False).tolist()
    )
    sample = df[df["patient_id"].isin(chosen)]
    text = sample.to_csv(index=False, lineterminator="\n")
    out.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    print(
        f"{out.name}: {sample['patient_id'].nunique()} patients, {len(sample):,} rows, "
        f"{sample['parameter'].nunique()} parameters, {out.stat().st_size:,} bytes"
    )


def make_synthetic_files(out_dir: Path) -> None:
    """The synthetic set: observations, truth beside them, and the gap intervals."""
    obs, truth, gaps = make_synthetic(n_series=SYNTHETIC_SERIES, seed=SYNTHETIC_SEED)
    files = {
        "synthetic_multichannel.csv": obs,
        "synthetic_truth.csv": truth,
        "synthetic_gaps.csv": gaps,
    }
    for name, frame in files.items():
        path = out_dir / name
        frame.to_csv(path, index=False, float_format="%.8g", lineterminator="\n")
        print(f"{name}: {len(frame):,} rows, {path.stat().st_size:,} bytes")


def _berlin_offset_hours(utc: pd.DatetimeIndex) -> np.ndarray:
    """Central European (Summer) Time offset for March/April 2024: +2 h from
    2024-03-31 01:00 UTC, +1 h before (no time-zone database needed)."""
    switch = pd.Timestamp("2024-03-31 01:00", tz="UTC")
    return np.where(utc >= switch, 2, 1)


def make_sensor_series(out: Path) -> None:
    """One room's temperature and humidity logger, two weeks, irregular, wide form.

    A battery logger meant to write every 30 minutes: intervals jitter (Gamma, mean
    30 min), about 8 % of writes are lost, and it was offline for about 9 hours once.
    The room is heated 06:30--18:00 on weekdays (set point 21 °C) and set back to
    17.5 °C otherwise; the temperature relaxes to the set point with a 1.5 h time
    constant, plus a small daily outdoor swing and sensor noise. Relative humidity falls
    as the room warms and drifts with the weather. Some cells are blank (sensor read
    failures). Time stamps are local time with their UTC offset, which changes from
    +01:00 to +02:00 when summer time starts on 2024-03-31.
    """
    rng = np.random.default_rng(SENSOR_SEED)
    start = pd.Timestamp("2024-03-21 23:00", tz="UTC")  # 2024-03-22 00:00 local
    span_h = 14 * 24.0
    steps = rng.gamma(shape=8.0, scale=0.5 / 8.0, size=int(span_h / 0.5 * 1.3))
    t = np.cumsum(steps)
    t = t[t < span_h]
    keep = rng.random(t.size) > 0.08
    outage_start = rng.uniform(0.4, 0.7) * span_h
    keep &= ~((t > outage_start) & (t < outage_start + 9.0))
    t = t[keep]
    utc = start + pd.to_timedelta(np.round(t * 3600.0), unit="s")
    utc = pd.DatetimeIndex(utc)
    offset = _berlin_offset_hours(utc)
    local = utc.tz_localize(None) + pd.to_timedelta(offset, unit="h")

    hour = local.hour.to_numpy() + local.minute.to_numpy() / 60.0
    weekday = local.day_of_week.to_numpy() < 5
    heating = weekday & (hour >= 6.5) & (hour < 18.0)
    setpoint = np.where(heating, 21.0, 17.5)
    temp = np.empty(t.size)
    temp[0] = 18.0
    dt = np.diff(t, prepend=t[0])
    for k in range(1, t.size):
        temp[k] = setpoint[k] + (temp[k - 1] - setpoint[k]) * np.exp(-dt[k] / 1.5)
    outdoor = 0.6 * np.sin(2 * np.pi * (hour - 9.0) / 24.0)
    temp_obs = temp + outdoor + 0.15 * rng.standard_normal(t.size)
    weather = np.cumsum(rng.normal(0.0, 0.35, size=t.size))
    weather -= np.linspace(0.0, weather[-1], t.size)  # no long-run trend
    humidity = 46.0 - 1.6 * (temp - 19.0) + weather + 1.0 * rng.standard_normal(t.size)
    humidity = np.clip(humidity, 20.0, 80.0)

    temp_text = np.array([f"{v:.2f}" for v in temp_obs], dtype=object)
    hum_text = np.array([f"{v:.1f}" for v in humidity], dtype=object)
    temp_text[rng.random(t.size) < 0.02] = ""
    hum_text[rng.random(t.size) < 0.05] = ""
    stamps = [
        f"{ts.strftime('%Y-%m-%dT%H:%M:%S')}+{h:02d}:00"
        for ts, h in zip(local, offset, strict=True)
    ]
    frame = pd.DataFrame(
        {"timestamp": stamps, "temperature_c": temp_text, "humidity_pct": hum_text}
    )
    frame.to_csv(out, index=False, lineterminator="\n")
    n_blank = int((frame == "").to_numpy().sum())
    print(f"{out.name}: {len(frame):,} rows, {n_blank} blank cells, {out.stat().st_size:,} bytes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "physionet",
        nargs="?",
        default=DEFAULT_PHYSIONET,
        help=f"PhysioNet 2012 set A long CSV (default: {DEFAULT_PHYSIONET})",
    )
    parser.add_argument("--out-dir", type=Path, default=HERE, help="where to write the files")
    args = parser.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)

    source = Path(args.physionet)
    if source.exists():
        make_physionet_sample(source, args.out_dir / "physionet2012_sample.csv.gz")
    else:
        print(f"warning: {source} not found; PhysioNet sample left unchanged", file=sys.stderr)
    make_synthetic_files(args.out_dir)
    make_sensor_series(args.out_dir / "single_series.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
