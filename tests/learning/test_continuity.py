"""The continuity bound, the parameter-Lipschitz classes, the Lipschitz constant of the loss, the
covering bound and the Rademacher estimator (book, chapter c4_continuity)."""

import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from infonce_book.learning.embeddings import BallLinear, BallMLP, NormalisedLinear, ball_projection, loss_per_tuple
from infonce_book.learning.rademacher import empirical_rademacher
from infonce_book.losses import info_nce_from_similarities
from infonce_book.models import GaussianModel, StudentTModel, VonMisesFisher
from infonce_book.theory import symbolic
from infonce_book.theory.bounds import continuity_bound, loss_lipschitz_constant, rademacher_covering_bound


def exact_change(sp_, sn, sp2, sn2, tau, variant="standard"):
    f = lambda a, b: info_nce_from_similarities(torch.as_tensor(a, dtype=torch.float64),  # noqa: E731
                                                torch.as_tensor(b, dtype=torch.float64), tau,
                                                variant=variant, reduction="none").numpy()
    return np.abs(f(sp2, sn2) - f(sp_, sn))


# --- continuity_bound: hand values ----------------------------------------------------------


def test_continuity_bound_hand_values():
    sp_, sn = np.array([0.5]), np.array([[0.0, 0.2]])
    sp2, sn2 = np.array([0.3]), np.array([[0.1, -0.2]])
    beta = 2.0  # tau = 0.5
    avg = continuity_bound(sp_, sn, sp2, sn2, 0.5, kind="average")
    assert avg[0] == pytest.approx(beta * 0.2 + beta * math.exp(2 * beta) / 3 * 0.5, rel=1e-14)
    dec = continuity_bound(sp_, sn, sp2, sn2, 0.5, kind="average", variant="decoupled")
    assert dec[0] == pytest.approx(beta * 0.2 + beta * math.exp(2 * beta) / 2 * 0.5, rel=1e-14)
    mx = continuity_bound(sp_, sn, sp2, sn2, 0.5, kind="max")
    assert mx[0] == pytest.approx(beta * (0.2 + 0.4), rel=1e-14)
    g = 3.0
    dv = continuity_bound(sp_, sn, sp2, sn2, 0.5, kind="dv", gamma=g)
    expected = beta * 0.2 + beta / g * (2 * beta + math.log((math.exp(g * 0.1) + math.exp(g * 0.4)) / 2))
    assert dv[0] == pytest.approx(expected, rel=1e-13)


def test_dv_tends_to_max_and_grid_is_at_most_max():
    rng = np.random.default_rng(0)
    sp_, sn = rng.uniform(-1, 1, 5), rng.uniform(-1, 1, (5, 7))
    sp2, sn2 = np.clip(sp_ + 0.01, -1, 1), np.clip(sn - 0.02 * rng.random((5, 7)), -1, 1)
    mx = continuity_bound(sp_, sn, sp2, sn2, 1.0, kind="max")
    far = continuity_bound(sp_, sn, sp2, sn2, 1.0, kind="dv", gamma=1e7)
    assert np.allclose(far, mx, rtol=1e-5)
    assert np.all(continuity_bound(sp_, sn, sp2, sn2, 1.0, kind="dv") <= mx + 1e-15)


# --- continuity_bound: property tests (the bound holds on arbitrary similarity vectors) ---------


@settings(max_examples=150, deadline=None)
@given(k=st.integers(1, 30), tau=st.floats(0.05, 20.0), seed=st.integers(0, 2**32 - 1),
       scale=st.sampled_from([1e-6, 1e-3, 0.1, 1.0, 2.0]), sparse=st.booleans(),
       variant=st.sampled_from(["standard", "decoupled"]))
def test_every_form_bounds_the_change(k, tau, seed, scale, sparse, variant):
    rng = np.random.default_rng(seed)
    sp_, sn = rng.uniform(-1, 1, 8), rng.uniform(-1, 1, (8, k))
    hp, hn = scale * rng.uniform(-1, 1, 8), scale * rng.uniform(-1, 1, (8, k))
    if sparse:
        hn[:, 1:] = 0.0
    sp2, sn2 = np.clip(sp_ + hp, -1, 1), np.clip(sn + hn, -1, 1)  # a new vector in the box
    actual = exact_change(sp_, sn, sp2, sn2, tau, variant)
    for kind in ("average", "max", "dv"):
        bound = continuity_bound(sp_, sn, sp2, sn2, tau, kind=kind, variant=variant)
        # float64 loss differences carry ~1e-15 * |loss| of rounding
        assert np.all(actual <= bound * (1 + 1e-9) + 1e-12 * (1 + 1 / tau)), kind


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 50), tau=st.floats(0.05, 5.0), seed=st.integers(0, 2**32 - 1))
def test_softmax_weight_bound_on_the_box(k, tau, seed):
    rng = np.random.default_rng(seed)
    s = rng.choice([-1.0, 1.0, 0.3], size=(16, k + 1))
    beta = 1 / tau
    p = special.softmax(beta * s, axis=1)[:, 1:]
    assert np.all(p <= math.exp(2 * beta) / (math.exp(2 * beta) + k) * (1 + 1e-12))
    assert math.exp(2 * beta) / (math.exp(2 * beta) + k) <= math.exp(2 * beta) / (k + 1)


@pytest.mark.parametrize("bad, match", [
    (dict(tau=0.0), "tau"), (dict(tau=float("nan")), "tau"), (dict(kind="l2"), "kind"),
    (dict(gamma=1.0, kind="max"), "gamma"), (dict(gamma=-1.0, kind="dv"), "gamma"),
    (dict(variant="symmetric"), "variant"),
])
def test_continuity_bound_rejects_bad_arguments(bad, match):
    args = dict(tau=1.0, kind="average")
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        continuity_bound(np.zeros(2), np.zeros((2, 3)), np.zeros(2), np.zeros((2, 3)), args.pop("tau"), **args)


def test_continuity_bound_rejects_bad_arrays():
    z2, z23 = np.zeros(2), np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        continuity_bound(z2 + 1.5, z23, z2, z23, 1.0)
    with pytest.raises(ValueError, match="NaN"):
        continuity_bound(z2, z23 * np.nan, z2, z23, 1.0)
    with pytest.raises(ValueError, match="s_neg must have shape"):
        continuity_bound(z2, np.zeros((3, 3)), z2, z23, 1.0)
    with pytest.raises(ValueError, match="new similarities"):
        continuity_bound(z2, z23, z2, np.zeros((2, 4)), 1.0)
    with pytest.raises(ValueError, match="B >= 1"):
        continuity_bound(np.zeros(0), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)), 1.0)
    with pytest.raises(TypeError, match="floating"):
        continuity_bound(torch.zeros(2, dtype=torch.int64), z23, z2, z23, 1.0)


# --- the loss's Lipschitz constant ------------------------------------------------------------


def test_loss_lipschitz_constant_hand_values():
    La, Lp, Ln = np.array([1.0]), np.array([2.0]), np.array([[1.0, 3.0]])
    beta = 1.0
    avg = loss_lipschitz_constant(La, Lp, Ln, 1.0, kind="average")
    assert avg[0] == pytest.approx(beta * 3 + beta * math.e**2 * 2 / 3 * (1 + 2), rel=1e-14)
    mx = loss_lipschitz_constant(La, Lp, Ln, 1.0, kind="max")
    assert mx[0] == pytest.approx(beta * 3 + beta * (1 + 3), rel=1e-14)
    with pytest.raises(ValueError, match="L_neg"):
        loss_lipschitz_constant(La, Lp, -Ln, 1.0)
    with pytest.raises(ValueError, match="shapes"):
        loss_lipschitz_constant(La, Lp, Ln[0], 1.0)


@pytest.mark.parametrize("make, model", [
    (lambda: NormalisedLinear(3, 0.5), VonMisesFisher(3, 4.0)),
    (lambda: BallLinear(6, 3, scale=0.3, radius=0.2), GaussianModel(6, 0.8)),
    (lambda: BallMLP(6, 8, 3, radius=0.5), GaussianModel(6, 0.8)),
])
def test_parameter_lipschitz_and_loss_lipschitz_hold(make, model):
    phi = make()
    gen = torch.Generator().manual_seed(1)
    x, xp, xn = model.sample_tuples(64, 5, generator=gen)
    L = [phi.lipschitz(t).numpy() for t in (x, xp, xn)]
    with torch.no_grad():
        for _ in range(10):
            t1, t2 = phi.random_parameters(gen), phi.random_parameters(gen)
            dist = float(torch.linalg.vector_norm(t1 - t2))
            f1 = [phi.set_theta_(t1)(t).clone() for t in (x, xp, xn)]
            l1 = loss_per_tuple(phi, x, xp, xn, 0.5).numpy()
            f2 = [phi.set_theta_(t2)(t) for t in (x, xp, xn)]
            l2 = loss_per_tuple(phi, x, xp, xn, 0.5).numpy()
            for a, b, Lx in zip(f1, f2, L):
                assert torch.all(torch.linalg.vector_norm(a, dim=-1) <= 1 + 1e-12)
                assert np.all(torch.linalg.vector_norm(a - b, dim=-1).numpy() <= Lx * dist * (1 + 1e-12))
            for kind in ("average", "max"):
                lam = loss_lipschitz_constant(*L, 0.5, kind=kind)
                assert np.all(np.abs(l1 - l2) <= lam * dist * (1 + 1e-12))


def test_ball_classes_validate_and_project():
    with pytest.raises(ValueError, match="radius must be < 1"):
        NormalisedLinear(3, 1.0)
    with pytest.raises(ValueError, match="dim must be >= 2"):
        NormalisedLinear(1, 0.5)
    with pytest.raises(ValueError, match="dim_out must be <= dim_in"):
        BallLinear(2, 3)
    with pytest.raises(ValueError, match="radius"):
        BallMLP(3, 4, 2, radius=-1.0)
    phi = BallLinear(4, 2, radius=0.1)
    with pytest.raises(ValueError, match="outside the ball"):
        phi.set_theta_(phi.center + 1.0)
    with torch.no_grad():
        phi.theta_param.add_(5.0)
    phi.project_()
    assert float(torch.linalg.vector_norm(phi.theta.detach() - phi.center)) == pytest.approx(0.1)
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 4\)"):
        phi(torch.zeros(3, 5, dtype=torch.float64))
    with pytest.raises(TypeError, match="floating"):
        phi(torch.zeros(3, 4, dtype=torch.int64))
    z = torch.tensor([[3.0, 4.0], [0.3, 0.4]], dtype=torch.float64)
    assert torch.allclose(ball_projection(z), torch.tensor([[0.6, 0.8], [0.3, 0.4]], dtype=torch.float64))


# --- the covering bound and the Rademacher estimator ------------------------------------------


def test_covering_bound_is_the_infimum_of_its_family():
    L, D, P, n = 3.0, 0.5, 9, 200
    b = rademacher_covering_bound(L, D, P, n)
    for eps in (1e-4, 1e-3, 1e-2, 0.1, 0.5):
        assert b <= L * (eps + D * math.sqrt(2 * P * math.log1p(2 * D / eps) / n)) + 1e-12
    assert b > 0
    assert rademacher_covering_bound(L, 0.0, P, n) == 0.0
    with pytest.raises(ValueError, match="radius"):
        rademacher_covering_bound(L, -1.0, P, n)
    with pytest.raises(ValueError, match="n_params"):
        rademacher_covering_bound(L, D, 0, n)


def _vmf_data(n, k, seed=0, dim=3):
    m = VonMisesFisher(dim, 4.0)
    gen = torch.Generator().manual_seed(seed)
    return m.sample_tuples(n, k, generator=gen)


@pytest.mark.slow
def test_rademacher_estimate_is_nonnegative_below_the_bound_and_linear_in_the_radius():
    data = _vmf_data(64, 4)
    values = {}
    for r in (0.05, 0.1):
        phi = NormalisedLinear(3, r)
        before = phi.theta.detach().clone()
        est = empirical_rademacher(phi, data, 6, tau=1.0, steps=25, seed=3)
        assert torch.equal(phi.theta.detach(), before)  # parameters restored
        assert 0.0 <= est.ci_low <= est.value <= est.ci_high
        assert all(v >= 0 for v in est.samples)
        L = [phi.lipschitz(t).numpy() for t in data]
        lam = loss_lipschitz_constant(*L, 1.0)
        assert est.ci_high <= rademacher_covering_bound(float(np.sqrt(np.mean(lam**2))), r, 9, 64)
        values[r] = est.value
    # the same signs (same seed): for small D the supremum is ~ D |mean gradient|
    assert 1.7 <= values[0.1] / values[0.05] <= 2.3


def test_rademacher_rejects_bad_arguments():
    data = _vmf_data(8, 2)
    with pytest.raises(ValueError, match="n_sigma"):
        empirical_rademacher(NormalisedLinear(3, 0.1), data, 1, tau=1.0)
    with pytest.raises(ValueError, match="tau"):
        empirical_rademacher(NormalisedLinear(3, 0.1), data, 4, tau=-1.0)
    with pytest.raises(ValueError, match="variant"):
        empirical_rademacher(NormalisedLinear(3, 0.1), data, 4, tau=1.0, variant="both")


# --- predictions used by the chapter ----------------------------------------------------------




def test_student_t_sampler_matches_its_norm_law():
    m = StudentTModel(8, 4.0, 0.8)
    gen = torch.Generator().manual_seed(0)
    x, xp = m.sample_pairs(4000, generator=gen)
    r = torch.linalg.vector_norm(x, dim=-1).numpy()
    rp = torch.linalg.vector_norm(xp, dim=-1).numpy()
    cdf = lambda v: 1 - m.norm_sf(v)  # noqa: E731
    assert stats.kstest(r, cdf).pvalue > 1e-3
    assert stats.kstest(rp, cdf).pvalue > 1e-3  # the positive has the same marginal law
    with pytest.raises(ValueError, match="nu"):
        StudentTModel(8, 1.0, 0.5)




# --- symbolic checks (the chapter's sympy cells) ----------------------------------------------


@pytest.mark.parametrize("n_neg", [1, 2, 3])
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_gateaux_derivative(n_neg, variant):
    derivative, claimed = symbolic.gateaux_derivative(n_neg, variant)
    assert sp.simplify(derivative - claimed) == 0


def test_weight_bound_and_dv_and_jacobian_symbolic():
    dp_own, dp_other, gap = symbolic.softmax_weight_bound()
    assert dp_own == 0 and dp_other == 0
    b, kk = symbolic.beta, symbolic.k
    assert sp.simplify(gap - sp.exp(2 * b) * (sp.exp(2 * b) - 1) / ((kk + 1) * (kk + sp.exp(2 * b)))) == 0
    gap_dv, at_gibbs = symbolic.donsker_varadhan_gap(3)
    assert at_gibbs == 0
    names = {str(v): v for v in gap_dv.free_symbols}
    val = gap_dv.subs({names["q1"]: sp.Rational(1, 2), names["q2"]: sp.Rational(1, 3), names["q3"]: sp.Rational(1, 6),
                       names["h1"]: 1, names["h2"]: 0, names["h3"]: sp.Rational(1, 2), names["gamma"]: 2})
    assert sp.N(val, 30) > 0
    assert symbolic.normalisation_jacobian(2) == sp.zeros(2, 2)
