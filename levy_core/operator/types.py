"""The operator's types: what a pass returns ([`LevyOutput`][levy_core.operator.types.LevyOutput]), the prior measure and
time decay it accepts ([`LevyPrior`][levy_core.operator.types.LevyPrior], [`TimeDecay`][levy_core.operator.types.TimeDecay]), the bounds of the learned
compatibility scale, and the split of ``log σ̂`` into its evidence and disagreement terms
([`log_sigma_terms`][levy_core.operator.types.log_sigma_terms], the only place that split is computed).

Kept apart from [`levy_core.operator.attention`][levy_core.operator.attention] so that the fused inputs and the
argument checks can name these types without importing the pass (no import cycle).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

__all__ = ["KAPPA_MAX", "KAPPA_MIN", "LevyOutput", "LevyPrior", "TimeDecay", "log_sigma_terms"]

#: Largest compatibility scale the module learns. With the null key at score
#: ``log Σw - kappa`` its weight stays above e^{-2·45} ≈ 8e-40, still resolved to ~1e-6
#: relative in float32, so ``log Λ`` stays exact to float32 rounding.
KAPPA_MAX = 45.0
KAPPA_MIN = 1e-2


class LevyOutput(NamedTuple):
    """Everything one Lévy attention pass returns.

    Attributes
    ----------
    mean : Tensor, shape (..., Q, D)
        ``m_q = Σ p_i v_i``, the expectation of the sampled operator.
    sigma : Tensor, shape (..., Q)
        ``σ̂(q) = sqrt(tr Σ_V(q) · φ(Λ_q))``, the exact RMS deviation of the sampled
        operator around ``mean`` (``+inf`` for a query whose keys are all masked).
    log_evidence : Tensor, shape (..., Q)
        ``log Λ_q`` (``-inf`` when every key is masked).
    disagreement : Tensor, shape (..., Q)
        ``tr Σ_V(q) = Σ p_i ||v_i - m_q||²`` (value units squared).
    log_data_evidence : Tensor, shape (..., Q)
        ``log Λ`` of the observations alone (equal to ``log_evidence`` without a prior).
    """

    mean: Tensor
    sigma: Tensor
    log_evidence: Tensor
    disagreement: Tensor
    log_data_evidence: Tensor

    @property
    def evidence_term(self) -> Tensor:
        """``½ log φ(Λ_q)``, shape (..., Q): the evidence share of ``log σ̂`` (scale-free)."""
        return log_sigma_terms(self.sigma, self.disagreement)[0]

    @property
    def disagreement_term(self) -> Tensor:
        """``½ log tr Σ_V(q)``, shape (..., Q): the disagreement share of ``log σ̂``."""
        return log_sigma_terms(self.sigma, self.disagreement)[1]

    def n_eff(self, kappa: float | Tensor) -> Tensor:
        """``n_eff = Λ e^{-κ}``: how many fully compatible observations support a query.

        ``kappa`` must broadcast against ``log_evidence`` (shape (..., Q)); for a per-head
        tensor of shape (..., 1, 1) pass ``kappa.squeeze(-1)``.
        """
        return torch.exp(self.log_evidence - torch.as_tensor(kappa, dtype=self.log_evidence.dtype))

    def to_normal(self, scale: float = 1.0) -> torch.distributions.Normal:
        """Scaled Gaussian predictive ``N(mean, (scale·σ̂)²)``; only for ``D == 1`` values."""
        if self.mean.shape[-1] != 1:
            raise ValueError(
                f"to_normal() needs one value dimension (D=1), got D={self.mean.shape[-1]}; "
                "project the values to a scalar output first"
            )
        return torch.distributions.Normal(self.mean[..., 0], scale * self.sigma, validate_args=False)


def log_sigma_terms(sigma: Tensor, disagreement: Tensor) -> tuple[Tensor, Tensor]:
    """Split ``log σ̂ = ½ log φ(Λ) + ½ log tr Σ_V`` into (evidence term, disagreement term).

    ``sigma`` and ``disagreement`` have the same shape (..., Q); so do both terms, and
    their sum is ``log σ̂``. For independent heads whose variances add
    (``σ̂² = Σ_h tr Σ_h φ(Λ_h)``) pass the combined σ̂ and ``Σ_h tr Σ_h``: the evidence term is
    then ½ log of the tr Σ-weighted mean of φ. Exact zeros are floored at the dtype's
    smallest normal number, so a query whose observations all agree gets a very negative,
    finite term rather than ``-inf`` (and never ``NaN``).
    """
    tiny = torch.finfo(sigma.dtype).tiny
    disagreement_term = 0.5 * torch.log(disagreement.clamp_min(tiny))
    evidence_term = torch.log(sigma.clamp_min(tiny)) - disagreement_term
    return evidence_term, disagreement_term

class LevyPrior(NamedTuple):
    """A prior measure superposed on the data's: atoms every query sees, whatever the data.

    The intensity becomes ``λ_data + λ_prior``: the prior is more atoms of one Poisson
    random measure, so the identity ``σ̂² = tr Σ · φ(Λ)`` holds for the whole measure. Far
    from the observations the data's evidence falls away, and mean and spread return to
    the prior's instead of collapsing onto the nearest observation.

    Attributes
    ----------
    log_mass : Tensor, shape (..., Q)
        ``log Λ_0``, the prior's total intensity for each query.
    mean : Tensor, shape (..., Q, P)
        Mean of the prior atoms' values (in read-out space when a read-out is given).
    variance : Tensor, shape (..., Q)
        ``Σ_j (λ_j / Λ_0) ‖u_j − mean‖²``, the prior atoms' spread (≥ 0).
    """

    log_mass: Tensor
    mean: Tensor
    variance: Tensor

    def atoms(self) -> tuple[Tensor, Tensor]:
        """Two atoms that realise the prior exactly: ``mean ± sqrt(variance)·e_1``, each with
        half the mass. Returns log intensities (..., Q, 2) and values (..., Q, 2, P)."""
        offset = torch.zeros_like(self.mean)
        offset[..., 0] = self.variance.clamp_min(0).sqrt()
        values = torch.stack([self.mean + offset, self.mean - offset], dim=-2)
        log_lam = (self.log_mass - math.log(2.0)).unsqueeze(-1).expand(*self.log_mass.shape, 2)
        return log_lam, values


class TimeDecay(NamedTuple):
    """Compatibility that falls with time distance: ``log λ_i += −(t_q − t_i)² / (2ℓ²)``.

    A Gaussian in ``t_q − t_i`` factorises into a dot product (``t_q t_i / ℓ²``), a key-only
    term and a query-only term, so it rides in the same single attention pass (two extra
    columns) and ``Λ`` falls monotonically outside the observed span.

    Attributes
    ----------
    query_time : Tensor, shape (..., Q)
    key_time : Tensor, shape (..., K)
    length_scale : float or Tensor broadcastable to (..., 1, 1)
        ``ℓ > 0`` in the times' unit (per head if a tensor).
    """

    query_time: Tensor
    key_time: Tensor
    length_scale: float | Tensor
