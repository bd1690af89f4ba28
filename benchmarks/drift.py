"""The drift rules (``levy_core.data.drift``) on the bundled many-series samples: how often they
flag data that are like the training data, and whether they flag data that are not.

For each sample, ``--splits`` random splits by series: the statistics of 60 % of the series
(what a fit records) against the last 20 % (``--new`` series of them when given), counting
the channels flagged — every flag there is a false alarm. Then the same 20 % thinned to a
fraction of its observations, and shifted by three training ranges, counting the channels
flagged out of those checked.

Usage::

    python benchmarks/drift.py [--splits 50] [--new N]
"""

from __future__ import annotations

import argparse

import numpy as np

from levy_core.data import Observations, from_frame, load_sample
from levy_core.data.drift import MIN_VALUES, check_drift, reference_from

SAMPLES = ("PhysioNet 2012 ICU (300 patients)", "Synthetic multichannel")


def split_flags(obs: Observations, splits: int, n_new: int | None, seed: int = 0) -> tuple[dict[str, int], float]:
    """Channel flags over random 60/20 splits of ``obs`` by series, by kind; and the largest
    distance of a single new value beyond its channel's training range, in training ranges
    (channels with ``MIN_VALUES`` training values): why values are not the unit counted."""
    rng = np.random.default_rng(seed)
    ids = np.array(obs.series_ids)
    counts: dict[str, int] = {}
    farthest = 0.0
    for _ in range(splits):
        perm = rng.permutation(ids)
        train, new = perm[: int(0.6 * len(ids))], perm[int(0.8 * len(ids)):]
        ref = reference_from(obs.subset(train).frame)
        new_obs = obs.subset(new[:n_new] if n_new else new)
        for kind in check_drift(ref, new_obs).flags["kind"]:
            counts[kind] = counts.get(kind, 0) + 1
        checked = {c: r for c, r in ref.channels.items() if r.n_values >= MIN_VALUES and r.maximum > r.minimum}
        frame = new_obs.frame[new_obs.frame["channel"].isin(checked)]
        lo, hi = (frame["channel"].map({c: getattr(r, side) for c, r in checked.items()}) for side in ("minimum", "maximum"))
        beyond = np.maximum(frame["value"] - hi, lo - frame["value"]) / (hi - lo)
        farthest = max(farthest, float(beyond.max()) if len(beyond) else 0.0)
    return counts, farthest


def detection(obs: Observations) -> list[str]:
    """Channels flagged on thinned and shifted copies of the last 20 % of the series."""
    ids = obs.series_ids
    ref = reference_from(obs.subset(ids[: int(0.6 * len(ids))]).frame)
    new = obs.subset(ids[int(0.8 * len(ids)):]).frame
    checked = [c for c, r in ref.channels.items() if r.n_values >= MIN_VALUES]
    lines = []
    for fraction in (0.5, 0.25, 0.125):
        thin = new.sample(frac=fraction, random_state=0)
        flags = check_drift(ref, from_frame(thin)).flags
        lines.append(f"thinned to {fraction:g}: {int((flags['kind'] == 'sparser').sum())} of {len(checked)} "
                     "channels flagged sparser")
    width = new["channel"].map({c: r.maximum - r.minimum for c, r in ref.channels.items()})
    shifted = new.assign(value=new["value"] + 3 * width)
    flags = check_drift(ref, from_frame(shifted)).flags
    lines.append(f"shifted by 3 training ranges: {int((flags['kind'] == 'values above the range').sum())} of "
                 f"{len(checked)} channels flagged")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=50)
    parser.add_argument("--new", type=int, default=None, help="new series per split (default: all 20 %%)")
    args = parser.parse_args()
    for name in SAMPLES:
        obs = load_sample(name)
        flags, farthest = split_flags(obs, args.splits, args.new)
        print(f"{name}: over {args.splits} random splits, channels flagged (false alarms): {flags or 'none'}; "
              f"farthest single new value beyond its training range: {farthest:.2f} ranges")
        for line in detection(obs):
            print(f"  {line}")


if __name__ == "__main__":
    main()
