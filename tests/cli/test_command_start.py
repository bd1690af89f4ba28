"""What a ``levy`` command loads before its first pass: nothing its work does not need.

A command's start is paid on every run (``levy rank`` of 3,383 stays spends most of its
wall time outside the scoring pass): ``scipy.stats`` (a second to import) only where a
Spearman correlation is computed, PyTorch's symbolic-shape machinery and SymPy never
(``torch.broadcast_shapes`` loads them on its first call; ``operator_checks.broadcast_shapes``
does not). A model zip is still checked on PyTorch's meta device, which loads them.
"""

from __future__ import annotations

import random
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch
from scipy import stats

from levy_core.metrics import crps_gaussian_per_point, spearman_sigma_abs_error
from levy_core.operator.checks import broadcast_shapes


@pytest.mark.integration
def test_a_pass_loads_neither_scipy_stats_nor_sympy(tmp_path) -> None:
    root = __file__.rsplit("/tests/", 1)[0]
    with zipfile.ZipFile(f"{root}/sample_data/models/synthetic_multichannel.zip") as z:
        z.extractall(tmp_path / "model")  # a model directory, as `levy rank MODEL` reads it
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from levy_core.pipeline.modelfile import load_model\n"
        "from levy_core.pipeline import ranking\n"
        "from levy_core.data import read_csv\n"
        "from levy_core.metrics import crps_gaussian\n"
        "obs = read_csv('sample_data/synthetic_multichannel.csv')\n"
        f"fitted = load_model({str(tmp_path / 'model')!r})\n"
        "ranking.warm_up(fitted)\n"
        "ranking.rank(fitted, obs)\n"
        "crps_gaussian(np.zeros(3), np.ones(3), np.ones(3))\n"
        "print(sorted(m for m in ('scipy.stats', 'sympy', 'torch.fx.experimental.symbolic_shapes')"
        " if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=root)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


def test_broadcast_shapes_is_torchs_for_concrete_shapes() -> None:
    rng = random.Random(0)
    for _ in range(5000):
        shapes = [torch.Size(rng.choice([0, 1, 1, 2, 3]) for _ in range(rng.randint(0, 4)))
                  for _ in range(rng.randint(0, 4))]
        try:
            expected = torch.broadcast_shapes(*shapes)
        except RuntimeError:
            with pytest.raises(RuntimeError, match="do not broadcast"):
                broadcast_shapes(*shapes)
            continue
        got = broadcast_shapes(*shapes)
        assert isinstance(got, torch.Size) and got == expected, shapes


def test_the_crps_and_spearman_are_scipys_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    y, mu = rng.normal(size=500), rng.normal(size=500)
    sigma = np.abs(rng.normal(size=500)) + 1e-3
    sigma[:5] = 0.0
    z = (y - mu) / np.where(sigma > 0, sigma, 1.0)
    from scipy import special

    crps = sigma * (z * (2.0 * special.ndtr(z) - 1.0) + 2.0 * stats.norm.pdf(z) - 1.0 / np.sqrt(np.pi))
    expected = np.where(sigma > 0, crps, np.abs(y - mu))
    np.testing.assert_array_equal(crps_gaussian_per_point(y, mu, sigma), expected)
    assert spearman_sigma_abs_error(y, mu, sigma) == float(stats.spearmanr(sigma, np.abs(y - mu)).statistic)
