"""``levy_attention`` on edge cases: κ and key weights validated, non-finite inputs refused by
name (or, with ``check_finite=False``, NaN exactly where they reach, on every path), values
too large for the dtype refused, ``Q = 0`` empty; the three paths (reference, fused with the
CPU kernel's log-sum-exp, fused with the public null key) agree on all of it."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from levy_core.operator import attention
from levy_core.operator.attention import LevyPrior, TimeDecay, levy_attention, log_phi
from levy_core.operator.sampling import sample_levy_attention

PATHS = ["reference", "fused-lse-kernel", "fused-null-key"]


def run(path: str, *args, **kwargs):
    """``levy_attention`` on one of the three paths."""
    if path == "reference":
        return levy_attention(*args, impl="reference", **kwargs)
    if path == "fused-lse-kernel":
        return levy_attention(*args, impl="fused", **kwargs)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(attention, "_FLASH_CPU_WITH_LSE", None)
        return levy_attention(*args, impl="fused", **kwargs)


def make(seed: int = 0, *, B: int = 2, H: int = 3, Q: int = 4, K: int = 5, E: int = 4, D: int = 2, P: int = 1,
         dtype=torch.float32) -> dict:
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype)  # noqa: E731
    return {
        "q": r(B, H, Q, E), "k": r(B, H, K, E), "v": r(B, H, K, D),
        "key_weight": torch.rand(B, 1, K, generator=g, dtype=dtype) + 0.1,
        "decay": TimeDecay(r(B, 1, Q) * 3, r(B, 1, K) * 3, torch.full((1, H, 1, 1), 2.0, dtype=dtype)),
        "readout": r(B, H, Q, P, D),
        "prior": LevyPrior(r(B, H, Q) - 1, r(B, H, Q, P), torch.rand(B, H, Q, generator=g, dtype=dtype)),
        "kappa": torch.tensor([1.0, 3.0, 9.0], dtype=dtype).view(1, H, 1, 1),
    }


def call(path: str, x: dict, **extra):
    kw = {key: x[key] for key in ("key_weight", "decay", "readout", "prior") if key in x}
    return run(path, x["q"], x["k"], x["v"], kappa=x["kappa"], **kw, **extra)


def assert_paths_agree(outs: dict, x: dict | None = None) -> None:
    """Same NaN/inf pattern on every path; finite entries equal to float32 rounding or, given
    the float64 inputs ``x``, to a bound derived from them (see ``rounding_bound``)."""
    ref = outs["reference"]
    tol, tol_mean = (None, None) if x is None else rounding_bound(x)
    for path, out in outs.items():
        for name, a, b in zip(ref._fields, ref, out, strict=True):
            assert torch.equal(torch.isnan(a), torch.isnan(b)), f"{path}: NaN pattern of {name}"
            assert torch.equal(torch.isinf(a), torch.isinf(b)), f"{path}: inf pattern of {name}"
            finite = torch.isfinite(a)
            if tol is None:
                torch.testing.assert_close(b[finite], a[finite], rtol=1e-4, atol=1e-4, msg=f"{path}: {name}")
            elif name == "sigma":  # σ̂² = tr Σ · φ(Λ): the error of tr Σ times φ
                phi = torch.exp(log_phi(ref.log_evidence, "rate"))[finite]
                assert ((b[finite].pow(2) - a[finite].pow(2)).abs() <= tol * phi + 1e-6 * a[finite].pow(2)).all(), (
                    f"{path}: sigma")
            else:
                atol = {"mean": tol_mean, "disagreement": tol}.get(name, 1e-6)
                torch.testing.assert_close(b[finite], a[finite], rtol=1e-6, atol=atol, msg=f"{path}: {name}")


def rounding_bound(x: dict) -> tuple[float, float]:
    """Absolute rounding errors of tr Σ and of the mean: the fused pass
    forms tr Σ as E‖u − ū‖² − ‖m − ū‖², so its error is some ulps of the largest second
    moment about the key mean (read-out and prior included; non-finite inputs left out),
    plus what the rounded key mean itself contributes."""
    eps = torch.finfo(x["v"].dtype).eps
    v = torch.where(torch.isfinite(x["v"]), x["v"], 0.0)
    v_c = v - v.mean(-2, keepdim=True)
    second = v_c.pow(2).sum(-1).max()
    if "readout" in x:
        second = second * torch.where(torch.isfinite(x["readout"]), x["readout"], 0.0).pow(2).sum((-2, -1)).max()
    if "prior" in x:
        prior = x["prior"].mean.pow(2).sum(-1) + x["prior"].variance
        second = torch.maximum(second, torch.where(torch.isfinite(prior), prior, 0.0).max())
    largest = float(v.pow(2).sum(-1).max())
    centring = largest * eps  # the weighted key mean itself is rounded
    return 1e3 * eps * (float(second) + centring), 1e3 * eps * (float(second) + largest) ** 0.5


# ---------------------------------------------------------------- κ


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kappa", [math.nan, math.inf, -math.inf, 0.0, -1.0])
def test_kappa_must_be_finite_and_positive(path, kappa):
    x = make()
    with pytest.raises(ValueError, match="kappa must be finite and > 0"):
        run(path, x["q"], x["k"], x["v"], kappa=kappa)
    per_head = x["kappa"].clone()
    per_head[0, 1] = kappa
    with pytest.raises(ValueError, match="kappa must be finite and > 0"):
        run(path, x["q"], x["k"], x["v"], kappa=per_head)
    with pytest.raises(ValueError, match="kappa must be finite and > 0"):
        sample_levy_attention(x["q"], x["k"], x["v"], kappa=kappa, n_draws=2)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("shape", [(3,), (4, 1, 1), (1, 3, 1), (1, 3, 2, 1), (2, 1, 3)])
def test_kappa_of_the_wrong_shape_names_the_expected_shapes(path, shape):
    x = make()  # batch (2, 3): per head (1, 3, 1, 1)
    with pytest.raises(ValueError, match=r"\(\.\.\., 1, 1\).*batch shape \(2, 3\).*\(1, 3, 1, 1\).*got shape"):
        run(path, x["q"], x["k"], x["v"], kappa=torch.ones(shape))
    with pytest.raises(ValueError, match=r"batch shape \(2, 3\)"):
        sample_levy_attention(x["q"], x["k"], x["v"], kappa=torch.ones(shape), n_draws=2)


@pytest.mark.parametrize("kappa", [torch.tensor(2.0), torch.tensor([2.0]), torch.full((1, 3, 1, 1), 2.0),
                                   torch.full((3, 1, 1), 2.0), torch.full((2, 1, 1, 1), 2.0)])
def test_kappa_shapes_that_broadcast_agree_with_a_number(kappa):
    x = make()
    expected = levy_attention(x["q"], x["k"], x["v"], kappa=2.0)
    outs = {path: run(path, x["q"], x["k"], x["v"], kappa=kappa) for path in PATHS}
    assert_paths_agree(outs)
    for out in outs.values():
        torch.testing.assert_close(out.mean, expected.mean)
        torch.testing.assert_close(out.sigma, expected.sigma)


# ---------------------------------------------------------------- non-finite inputs


def spoil(x: dict, name: str, value: float) -> dict:
    """A copy of ``x`` with one element of the input ``name`` set to ``value``."""
    x = dict(x)
    if name.startswith("decay."):
        field = name.split(".")[1]
        t = getattr(x["decay"], field).clone()
        t.view(-1)[1] = value
        x["decay"] = x["decay"]._replace(**{field: t})
    elif name.startswith("prior."):
        field = name.split(".")[1]
        t = getattr(x["prior"], field).clone()
        t.view(-1)[1] = value
        x["prior"] = x["prior"]._replace(**{field: t})
    else:
        x[name] = x[name].clone()
        x[name].view(-1)[1] = value
    return x


ARGUMENTS = ["q", "k", "v", "key_weight", "decay.query_time", "decay.key_time", "readout", "prior.log_mass",
             "prior.mean", "prior.variance"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", ARGUMENTS)
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_non_finite_input_is_refused_by_name(path, name, value):
    x = spoil(make(), name, value)
    with pytest.raises(ValueError, match=rf"^{name} has 1 non-finite value.*check_finite=False"):
        call(path, x)


@pytest.mark.parametrize("name", ["q", "k", "v", "key_weight", "decay.key_time", "readout"])
def test_sampler_refuses_non_finite_inputs_by_name(name):
    x = spoil(make(), name, math.nan)
    kw = {key: x[key] for key in ("key_weight", "decay", "readout")}
    with pytest.raises(ValueError, match=rf"^{name} has 1 non-finite"):
        sample_levy_attention(x["q"], x["k"], x["v"], kappa=x["kappa"], n_draws=2, **kw)


def test_prior_of_no_mass_is_finite_input():
    x = make()
    x["prior"] = x["prior"]._replace(log_mass=torch.full_like(x["prior"].log_mass, -math.inf))
    with_none = {key: x[key] for key in ("key_weight", "decay", "readout")}
    plain = levy_attention(x["q"], x["k"], x["v"], kappa=x["kappa"], **with_none)
    outs = {path: call(path, x) for path in PATHS}
    assert_paths_agree(outs)
    torch.testing.assert_close(outs["reference"].mean, plain.mean)


@pytest.mark.parametrize("path", PATHS)
def test_negative_key_weight_is_refused_even_without_the_finite_check(path):
    x = spoil(make(), "key_weight", -0.5)
    with pytest.raises(ValueError, match="non-negative"):
        call(path, x, check_finite=False)


@pytest.mark.parametrize("n_keys", [3, 7, 8, 12])  # the CPU kernel's tiles change at 8 keys
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_opt_out_a_non_finite_query_is_nan_on_every_path(n_keys, value):
    x = make(1, K=n_keys)
    x = {key: x[key] for key in ("q", "k", "v", "kappa")}
    x["q"] = x["q"].clone()
    x["q"][0, 1, 2, 0] = value
    outs = {path: call(path, x, check_finite=False) for path in PATHS}
    assert_paths_agree(outs)
    clean = levy_attention(x["q"].nan_to_num(0.0, 0.0, 0.0), x["k"], x["v"], kappa=x["kappa"])
    for out in outs.values():
        assert torch.isnan(out.sigma[0, 1, 2]) and torch.isnan(out.mean[0, 1, 2]).all()
        assert torch.isnan(out.log_evidence[0, 1, 2]) and torch.isnan(out.disagreement[0, 1, 2])
        others = torch.ones_like(out.sigma, dtype=torch.bool)
        others[0, 1, 2] = False
        torch.testing.assert_close(out.sigma[others], clean.sigma[others], rtol=1e-4, atol=1e-5)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(ARGUMENTS), value=st.sampled_from([math.nan, math.inf, -math.inf]),
       n_keys=st.integers(1, 10), n_queries=st.integers(1, 5), seed=st.integers(0, 2**16),
       options=st.sampled_from(["none", "decay", "all"]), check_finite=st.booleans())
def test_property_non_finite_inputs_raise_or_agree_across_paths(name, value, n_keys, n_queries, seed, options,
                                                                 check_finite):
    """Either ``ValueError`` naming the argument (the default) or, opted out, every path
    returns NaN on the same outputs and the same finite numbers elsewhere.

    In float64: float32 forms tr Σ as a difference whose absolute error is dozens of ulps of
    E‖v − v̄‖² (bounded in test_attention_extensions); here any disagreement is a bug."""
    x = make(seed, K=n_keys, Q=n_queries, dtype=torch.float64)
    keep = {"none": ("q", "k", "v", "kappa", "key_weight"), "decay": ("q", "k", "v", "kappa", "key_weight", "decay"),
            "all": tuple(x)}[options]
    x = {key: x[key] for key in keep}
    if name.split(".")[0] not in x:
        name = "q"
    if name in ("key_weight", "prior.log_mass") and value == -math.inf:
        value = math.inf  # a negative weight has its own check; log_mass -inf is a prior of no mass
    x = spoil(x, name, value)
    if check_finite:
        for path in PATHS:
            with pytest.raises(ValueError, match=rf"^{name} has 1 non-finite"):
                call(path, x)
        return
    outs = {path: call(path, x, check_finite=False) for path in PATHS}
    assert_paths_agree(outs, x)
    assert torch.isnan(outs["reference"].sigma).any()


@settings(max_examples=100, deadline=None)
@given(n_keys=st.integers(1, 10), n_queries=st.integers(1, 5), seed=st.integers(0, 2**16),
       log10_scale=st.integers(-6, 6), options=st.booleans())
def test_property_finite_inputs_agree_across_paths(n_keys, n_queries, seed, log10_scale, options):
    """Finite inputs of any scale: finite outputs, the same on every path (float64, as above)."""
    x = make(seed, K=n_keys, Q=n_queries, dtype=torch.float64)
    x["v"] = x["v"] * 10.0**log10_scale
    if not options:
        x = {key: x[key] for key in ("q", "k", "v", "kappa", "key_weight")}
    outs = {path: call(path, x) for path in PATHS}
    for out in outs.values():
        assert all(torch.isfinite(t).all() for t in out)
    assert_paths_agree(outs, x)


# ---------------------------------------------------------------- values too large, Q = 0


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("readout", [False, True])
def test_values_whose_squares_overflow_float32_are_refused(path, readout):
    x = make(3)
    x = {key: x[key] for key in ("q", "k", "v", "kappa")} | ({"readout": make(3)["readout"]} if readout else {})
    x["v"] = x["v"] * 1e20
    with pytest.raises(ValueError, match=r"v's deviations from their key mean reach .*overflow torch.float32"
                                         r".*rescale v .*float64"):
        call(path, x)


@pytest.mark.parametrize("path", PATHS)
def test_huge_values_rescaled_or_in_float64_give_the_exact_answer(path):
    x = make(3)
    q, k, v, kappa = x["q"], x["k"], x["v"], x["kappa"]
    big64 = run(path, q.double(), k.double(), v.double() * 1e20, kappa=kappa.double())
    small = run(path, q, k, v * 1e-2, kappa=kappa)  # the operator is equivariant in v
    assert torch.isfinite(big64.sigma).all() and torch.isfinite(big64.disagreement).all()
    torch.testing.assert_close(big64.mean * 1e-22, small.mean.double(), rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(big64.sigma * 1e-22, small.sigma.double(), rtol=1e-4, atol=1e-7)
    # a constant offset of 1e20 is centred away: finite, and the spread of the stored values
    shifted = run(path, q, k, v + 1e20, kappa=kappa)
    assert torch.isfinite(shifted.sigma).all() and torch.isfinite(shifted.mean).all()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("options", ["none", "decay", "all"])
@pytest.mark.parametrize("grad", [False, True])
def test_no_queries_gives_empty_outputs_of_the_right_shapes(path, options, grad):
    x = make(4, Q=0, P=2)
    keep = {"none": ("q", "k", "v", "kappa", "key_weight"), "decay": ("q", "k", "v", "kappa", "key_weight", "decay"),
            "all": tuple(x)}[options]
    x = {key: x[key] for key in keep}
    if grad:
        x["q"].requires_grad_(True)
    out = call(path, x)
    width = 2 if options == "all" else x["v"].shape[-1]
    assert out.mean.shape == (2, 3, 0, width)
    for t in out[1:]:
        assert t.shape == (2, 3, 0)
    if grad:
        out.mean.sum().backward()
        assert x["q"].grad.shape == x["q"].shape
