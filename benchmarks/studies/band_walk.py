"""The walk of one band level through the code: from a backtest window to its score, and
from the dashboard's band view to its chart (``docs/architecture.md``).

A profiler follows the level ``L`` (0.8 here) while one shipped sample model
(``sample_data/models/synthetic_multichannel.zip``) is scored on a backtest window
(``levy_core.forecast.windows.score_window``) and drawn by the band view
(``levy_dashboard.display.widgets.band_figure``), and counts:

- stays: calls of a project function that receive the level (``0.8``, ``80``, their
  strings, a list or mapping holding one, or an object whose ``levels`` / ``level`` holds
  it), in call order, and the files they are in;
- returns: stays that hand a value back up to a caller in another file;
- climbs back up: the walk going down again, with the bare level, into a package
  (``levy_core.pipeline``, ``levy_core.calibration``, ``dashboard/services``, …) it had
  already left upwards: something derived from the level anew, not read from what was
  handed up; beside them, the re-descents that carry the level inside a value handed up
  (a ``Band``, the view's inputs: reads);
- derivations: calls that compute a band from a predictive (``Predictive.interval``, which
  asks the calibrator or the adaptive walk) per (method, level, kind): a band derived once
  is one per triple. The walk does not follow the level inside a derivation (the
  calibrator's own functions), which is the same whichever way the band is then passed.

Usage::

    python benchmarks/studies/band_walk.py            # both walks, a line each
    python benchmarks/studies/band_walk.py --stays    # and every stay in order
"""

from __future__ import annotations

import logging
import sys
import types
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LEVEL = 0.8
SAMPLE = "synthetic_multichannel"
# the layers, top first: a package's rank (higher is above)
RANKS = {"dashboard/app": 100, "dashboard/views": 95, "dashboard/display": 90, "dashboard/session": 85,
         "dashboard/services": 80, "dashboard/charts": 75, "dashboard/fitting": 70, "dashboard/data": 70,
         "levy_core/cli": 60, "levy_core/forecast": 55, "levy_core/decisions": 50, "levy_core/serving": 48,
         "levy_core/pipeline": 45, "levy_core/calibration": 40, "levy_core/training": 35, "levy_core/episodes": 33,
         "levy_core/offsets": 31, "levy_core/model": 29, "levy_core/operator": 27, "levy_core/metrics": 20,
         "levy_core/data": 10, "levy_core/runtime": 5}
OURS = (str(REPO / "levy_core") + "/", str(REPO / "dashboard") + "/")
DERIVING = "Predictive.interval"  # every band of a method's predictive is derived here


def bare_level(value: Any) -> bool:
    """Whether ``value`` holds the level as a number, a string or in a plain container."""
    if isinstance(value, (list, tuple, set, frozenset, dict)) and len(value) < 50:
        return any(bare_level(v) for v in value)
    return not hasattr(type(value), "__dataclass_fields__") and holds_level(value)


def holds_level(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is the level or carries it (see the module's docstring)."""
    if isinstance(value, bool) or depth > 2:
        return False
    if isinstance(value, (int, float)):
        return value in (LEVEL, 100 * LEVEL)
    if isinstance(value, str):
        return value in (str(LEVEL), f"{100 * LEVEL:g}")
    if isinstance(value, (list, tuple, set, frozenset)) and len(value) < 50:
        return any(holds_level(v, depth + 1) for v in value)
    if isinstance(value, dict) and len(value) < 50:
        return any(holds_level(k, depth + 1) for k in value)
    fields = getattr(type(value), "__dataclass_fields__", {})  # a Band, the view's inputs, …
    return any(name in fields and holds_level(getattr(value, name, None), depth + 1) for name in ("levels", "level"))


_REAL: dict[str, str] = {}


def _real(file: str) -> str:
    """``file`` with symbolic links resolved (the dashboard is imported through one), cached."""
    if file not in _REAL:
        _REAL[file] = str(Path(file).resolve())
    return _REAL[file]


def _package(file: str) -> str:
    """The package of a project file, as `RANKS` names it (``levy_core/forecast``, ``dashboard/app``)."""
    parts = Path(file).relative_to(REPO).parts
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0] + "/" + parts[1].removesuffix(".py")


def walk(work: Callable[[], Any]) -> dict[str, Any]:
    """Run ``work`` under the profiler; the level's stays, returns, climbs and derivations."""
    stays: list[tuple[str, str, int, bool]] = []  # (file, function, depth, the level bare)
    open_stays: dict[int, tuple[str, int]] = {}  # frame id -> (file, depth)
    returns, derivations = [0], Counter()
    depth, inside = [0], [None]  # inside: the frame of the derivation under way

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        file = _real(frame.f_code.co_filename)
        ours = file.startswith(OURS)
        if event == "call":
            depth[0] += 1
            if not ours or inside[0] is not None:
                return
            name = frame.f_code.co_qualname
            code = frame.f_code
            args = [frame.f_locals.get(v) for v in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]]
            if any(holds_level(a) for a in args):
                stays.append((str(Path(file).relative_to(REPO)), name, depth[0], any(bare_level(a) for a in args)))
                open_stays[id(frame)] = (file, depth[0])
            if name == DERIVING:
                local = frame.f_locals
                derivations[(local["self"].method.key, local["level"], local["kind"])] += 1
                inside[0] = id(frame)
        else:
            depth[0] -= 1
            if inside[0] == id(frame):
                inside[0] = None
            here = open_stays.pop(id(frame), None)
            caller = frame.f_back
            if here is not None and arg is not None and caller is not None and _real(caller.f_code.co_filename) != here[0]:
                returns[0] += 1

    warnings.simplefilter("ignore")
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    climbs, reads, left, prev = 0, 0, set(), None
    for file, _, _, bare in stays:
        here = _package(str(REPO / file))
        if prev is None or here == prev:
            prev = here
            continue
        if RANKS[here] > RANKS[prev]:
            left.add(prev)  # left upwards
        elif here in left:  # down again into a package already left upwards
            climbs, reads = climbs + bare, reads + (not bare)
        prev = here
    return {"stays": len(stays), "files": len({s[0] for s in stays}), "returns": returns[0], "climbs": climbs,
            "reads": reads, "derivations": dict(derivations), "path": stays}


def sample_model() -> tuple[Any, Any, Any]:
    """The shipped ``SAMPLE`` model (a ``FittedModel``), its sample's ``Observations`` and a
    dashboard ``FitResult`` around both (its data prepared once)."""
    from levy_dashboard.fitting.fits import FitResult

    from levy_core.data import read_csv
    from levy_core.pipeline.prepared import prepare
    from levy_core.serving.modelzip import load_model_zip

    fitted = load_model_zip((REPO / "sample_data" / "models" / f"{SAMPLE}.zip").read_bytes())
    obs = read_csv(REPO / "sample_data" / f"{SAMPLE}.csv")
    data = prepare(fitted, obs)
    res = FitResult("band-walk", fitted, data, "", None, SAMPLE, [], 0.0, "")  # type: ignore[arg-type]
    return fitted, obs, res


def backtest_walk(fitted: Any, obs: Any) -> dict[str, Any]:
    """The level from ``score_window`` to the window's coverage score."""
    from levy_core.forecast import windows

    cut = windows.cutoffs(obs, 1, 12.0, 12.0)[0]
    win = windows.window(obs, 0, cut, 12.0, 1)
    return walk(lambda: windows.score_window(fitted, win, obs, [100 * LEVEL, 90], "auto"))


def dashboard_walk(res: Any) -> dict[str, Any]:
    """The level from the band view's ``widgets.band_figure`` to the chart."""
    from levy_dashboard.display import widgets

    sid = res.data.series_choices()[0]
    view = widgets.View(sid, res.data.channels_of(sid, res.fitted.channels)[0], LEVEL, "conformal", False, 0)
    widgets.band_figure(res, view)  # the grid's model pass, cached: the walk is that of a moved level
    return walk(lambda: widgets.band_figure(res, view))


def main() -> None:
    logging.disable(logging.WARNING)  # streamlit's "no runtime" warnings: its caches run bare here
    fitted, obs, res = sample_model()
    for name, found in (("backtest window → score", backtest_walk(fitted, obs)),
                        ("band view → chart", dashboard_walk(res))):
        derived = found["derivations"]
        print(f"{name}: {found['stays']} stays in {found['files']} files, {found['returns']} returns, "
              f"{found['climbs']} climbs back up ({found['reads']} re-descents carrying the band); "
              f"{sum(derived.values())} derivations of {len(derived)} (method, level, kind): {derived}")
        if "--stays" in sys.argv:
            for file, function, depth, bare in found["path"]:
                print(f"    {'  ' * min(depth, 20)}{file}:{function}{'' if bare else '  (carried)'}")


if __name__ == "__main__":
    main()
