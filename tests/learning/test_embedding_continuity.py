"""Continuity in the embeddings (book, Proposition ``c4-prop-embedding``), the Lipschitz constants
it gives in the parameters (Corollaries ``c4-cor-embedding``, ``c4-cor-dv``) and the
vector-contraction bound (Theorem ``c4-thm-vector``): symbolic derivatives, exact values, and
property tests on random points of the unit ball and random parameter pairs."""

import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from infonce_book.learning.embeddings import BallLinear, BallMLP, NormalisedLinear, loss_per_tuple
from infonce_book.learning.rademacher import empirical_rademacher
from infonce_book.models import GaussianModel, VonMisesFisher
from infonce_book.theory import symbolic
from infonce_book.theory.bounds import (
    embedding_lipschitz_constant,
    loss_lipschitz_constant,
    max_negative_weight,
    rademacher_covering_bound,
    tunable_lipschitz_constant,
    vector_contraction_bound,
)

SETTINGS = settings(max_examples=30, deadline=None)
variants = st.sampled_from(["standard", "decoupled"])
betas = st.sampled_from([0.1, 0.35, 0.5, 1.0, 2.0, 4.0])


def ball_points(rng, shape, dim):
    """Uniform points of the closed unit ball of R^dim, plus some on the sphere and at the centre."""
    g = rng.standard_normal(shape + (dim,))
    g /= np.linalg.norm(g, axis=-1, keepdims=True)
    r = rng.uniform(0, 1, shape + (1,)) ** (1.0 / dim)
    r = np.where(rng.uniform(size=shape + (1,)) < 0.2, 1.0, r)
    return g * r


def loss_of_embeddings(u, V, beta, variant):
    """g(e) of Proposition c4-prop-embedding: u (B, d), V (B, k+1, d) with V[:, 0] the positive."""
    s = np.einsum("bd,bkd->bk", u, V)
    z = beta * (s if variant == "standard" else s[:, 1:])
    return -beta * s[:, 0] + logsumexp(z, axis=1)


@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_partial_derivatives_in_the_embeddings_symbolic(variant):
    diffs = symbolic.embedding_gradients(3, 2, variant)
    assert set(diffs) == {"u", "v0", "v1", "v2", "v3"}
    for d in diffs.values():
        assert d == sp.zeros(2, 1)


def test_k_pmax_is_at_most_k_and_e_2beta_symbolic():
    gap_k, gap_e = symbolic.weight_bound_gaps()
    E = sp.exp(2 * symbolic.beta)
    assert sp.simplify(gap_k - symbolic.k**2 / (E + symbolic.k)) == 0
    assert sp.simplify(gap_e - sp.exp(4 * symbolic.beta) / (E + symbolic.k)) == 0


def test_max_negative_weight_is_attained_at_the_extreme_configuration():
    # u = v_1 = e1, every other embedding -e1: the weight of negative 1 is exactly p_max
    for beta, k in ((2.0, 16), (1.0, 4), (0.3, 1)):
        e = np.eye(3)[0]
        V = np.stack([-e, e] + [-e] * (k - 1))
        s = V @ e
        w = np.exp(beta * s) / np.exp(beta * s).sum()
        assert w[1] == pytest.approx(max_negative_weight(k, 1 / beta), rel=1e-14)
        q = np.exp(beta * s[1:]) / np.exp(beta * s[1:]).sum()
        assert q[0] == pytest.approx(max_negative_weight(k, 1 / beta, variant="decoupled"), rel=1e-14)
    assert max_negative_weight(10**6, 1e-4) == 1.0  # no overflow at a tiny temperature
    assert max_negative_weight(16, 0.5) == pytest.approx(math.exp(4) / (math.exp(4) + 16), rel=1e-15)


def test_embedding_constant_hand_values():
    # NormalisedLinear(3, 1/2): L = 2 everywhere; at tau = 1/2, k = 16: omega = 1, Lambda* = 4 beta L = 16
    L = np.full(3, 2.0), np.full(3, 2.0), np.full((3, 16), 2.0)
    assert np.allclose(embedding_lipschitz_constant(*L, 0.5), 16.0, rtol=1e-15)
    # k = 1, tau = 10 (beta = 0.1): omega_1 = p_max = e^{0.2}/(e^{0.2} + 1)
    beta = 0.1
    pm = math.exp(2 * beta) / (math.exp(2 * beta) + 1)
    La, Lp, Ln = np.array([1.0]), np.array([3.0]), np.array([[5.0]])
    expected = beta * (pm * (2 * 1 + 3) + min(5.0, pm * 5.0))
    assert embedding_lipschitz_constant(La, Lp, Ln, 10.0)[0] == pytest.approx(expected, rel=1e-14)
    # decoupled at k = 2, beta = 1: q_max = e^2/(e^2 + 1)
    qm = math.exp(2) / (math.exp(2) + 1)
    Ln2 = np.array([[1.0, 4.0]])
    dec = embedding_lipschitz_constant(La, Lp, Ln2, 1.0, variant="decoupled")[0]
    assert dec == pytest.approx(2 * 1 + 3 + min(4.0, qm * 5.0), rel=1e-14)
    # the tunable constant at a given gamma, hand value
    g = 2.0
    kq = 2 * qm
    dv = tunable_lipschitz_constant(La, Lp, Ln2, 1.0, gamma=g, variant="decoupled")[0]
    assert dv == pytest.approx(2 + 3 + (math.log(kq) + math.log((math.exp(g) + math.exp(4 * g)) / 2)) / g,
                               rel=1e-13)


@SETTINGS
@given(beta=betas, k=st.integers(1, 64), variant=variants, seed=st.integers(0, 2**31 - 1),
       short=st.booleans())
def test_embedding_bound_holds_on_random_segments_of_the_ball_product(beta, k, variant, seed, short):
    if variant == "decoupled" and k == 1:
        k = 2
    rng = np.random.default_rng(seed)
    B, d = 400, 3
    u, V = ball_points(rng, (B,), d), ball_points(rng, (B, k + 1), d)
    u2, V2 = ball_points(rng, (B,), d), ball_points(rng, (B, k + 1), d)
    if short:  # a short step from e towards e2 stays in the (convex) ball product
        u2, V2 = u + 1e-3 * (u2 - u), V + 1e-3 * (V2 - V)
    du, dV = np.linalg.norm(u2 - u, axis=-1), np.linalg.norm(V2 - V, axis=-1)
    bound = embedding_lipschitz_constant(du, dV[:, 0], dV[:, 1:], 1 / beta, variant=variant)
    actual = np.abs(loss_of_embeddings(u2, V2, beta, variant) - loss_of_embeddings(u, V, beta, variant))
    assert np.all(actual <= bound * (1 + 1e-9) + 1e-15)


@SETTINGS
@given(beta=betas, k=st.integers(1, 64), variant=variants, seed=st.integers(0, 2**31 - 1))
def test_softmax_weights_on_ball_points_are_at_most_p_max_and_their_squares_at_most_p_max_times_1_minus_p0(
        beta, k, variant, seed):
    if variant == "decoupled" and k == 1:
        k = 2
    rng = np.random.default_rng(seed)
    u, V = ball_points(rng, (300,), 3), ball_points(rng, (300, k + 1), 3)
    s = np.einsum("bd,bkd->bk", u, V)
    z = beta * (s if variant == "standard" else s[:, 1:])
    w = np.exp(z - z.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    neg = w[:, 1:] if variant == "standard" else w
    p0 = w[:, 0] if variant == "standard" else np.zeros(len(w))
    pm = max_negative_weight(k, 1 / beta, variant=variant)
    assert np.all(neg <= pm * (1 + 1e-12))
    assert np.all((neg**2).sum(axis=1) <= pm * (1 - p0) * (1 + 1e-12) + 1e-300)


@SETTINGS
@given(beta=betas, k=st.integers(1, 200), variant=variants, seed=st.integers(0, 2**31 - 1))
def test_embedding_constant_is_at_most_the_average_and_the_max_forms_and_the_tunable_at_most_it(
        beta, k, variant, seed):
    rng = np.random.default_rng(seed)
    B = 50
    La, Lp = rng.lognormal(0, 1, B), rng.lognormal(0, 1, B)
    Ln = rng.lognormal(0, rng.uniform(0.1, 2), (B, k))
    tau = 1 / beta
    star = embedding_lipschitz_constant(La, Lp, Ln, tau, variant=variant)
    avg = loss_lipschitz_constant(La, Lp, Ln, tau, kind="average", variant=variant)
    mx = loss_lipschitz_constant(La, Lp, Ln, tau, kind="max", variant=variant)
    dv = tunable_lipschitz_constant(La, Lp, Ln, tau, variant=variant)
    assert np.all(star <= avg * (1 + 1e-12)) and np.all(star <= mx * (1 + 1e-12))
    assert np.all(dv <= star * (1 + 1e-12))
    assert np.all(dv >= beta * (min(1.0, k * max_negative_weight(k, tau)) if variant == "standard" else 1.0)
                  * (2 * La + Lp) - 1e-12)


def _pairs_ratio(phi, x, xp, xn, lam, tau, variant, gen, n_pairs=8):
    """Largest |l(theta') - l(theta)| / (Lambda |theta' - theta|) over random pairs in Theta (half of
    them a short step: the local ratio is what a Lipschitz constant must cover)."""
    worst = 0.0
    with torch.no_grad():
        for i in range(n_pairs):
            t1, t2 = phi.random_parameters(gen), phi.random_parameters(gen)
            if i % 2:
                t2 = t1 + 1e-3 * (t2 - t1)
            l1 = loss_per_tuple(phi.set_theta_(t1), x, xp, xn, tau, variant=variant).numpy()
            l2 = loss_per_tuple(phi.set_theta_(t2), x, xp, xn, tau, variant=variant).numpy()
            dist = float(torch.linalg.vector_norm(t1 - t2))
            worst = max(worst, float(np.max(np.abs(l1 - l2) / (lam * dist))))
        phi.set_theta_(phi.center)
    return worst


CLASSES = {"NormalisedLinear": (lambda: NormalisedLinear(3, 0.5), VonMisesFisher(3, 2.0)),
           "BallLinear": (lambda: BallLinear(8, 4, scale=0.25, radius=0.05), GaussianModel(8, 0.8)),
           "BallMLP": (lambda: BallMLP(8, 16, 4, radius=0.5), GaussianModel(8, 0.8))}


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(cls=st.sampled_from(sorted(CLASSES)), tau=st.sampled_from([0.5, 1.0, 10.0]), k=st.sampled_from([1, 2, 16, 64]),
       variant=variants, seed=st.integers(0, 2**31 - 1))
def test_embedding_and_tunable_constants_hold_on_random_parameter_pairs_of_the_three_classes(cls, tau, k, variant,
                                                                                            seed):
    if variant == "decoupled" and k == 1:
        k = 2
    make, model = CLASSES[cls]
    phi = make()
    gen = torch.Generator().manual_seed(seed)
    x, xp, xn = model.sample_tuples(100, k, generator=gen)
    with torch.no_grad():
        L = [phi.lipschitz(t).numpy() for t in (x, xp, xn)]
    for lam in (embedding_lipschitz_constant(*L, tau, variant=variant),
                tunable_lipschitz_constant(*L, tau, variant=variant)):
        assert _pairs_ratio(phi, x, xp, xn, lam, tau, variant, gen) <= 1.0


def test_vector_contraction_block_scalings_symbolic():
    at_opt, lagrange = symbolic.block_scaling_optimum()
    assert at_opt == 0 and lagrange == 0


@pytest.mark.parametrize("variant", ["standard", "decoupled"])
@pytest.mark.parametrize("beta, k", [(0.5, 1), (1.0, 4), (2.0, 16), (2.0, 256)])
def test_gradient_in_scaled_coordinates_is_at_most_the_vector_lipschitz_constant(variant, beta, k):
    """|grad| of the loss in (a u, b v_0, c v_j) <= beta sqrt(4/a^2 + 1/b^2 + p_max/c^2) on the ball
    product (random points and the extreme configuration)."""
    if variant == "decoupled" and k == 1:
        k = 2
    pm = max_negative_weight(k, 1 / beta, variant=variant)
    a, b, c = math.sqrt(2.0), 1.0, (pm / k) ** 0.25
    rng = np.random.default_rng(k)
    B, d = 2000, 3
    u, V = ball_points(rng, (B,), d), ball_points(rng, (B, k + 1), d)
    e = np.eye(d)[0]
    u[: B // 2], V[: B // 2] = e, -e
    V[: B // 2, 1] = e
    wa = torch.tensor(a * u, requires_grad=True)
    wp = torch.tensor(b * V[:, 0], requires_grad=True)
    wn = torch.tensor(c * V[:, 1:], requires_grad=True)
    s0 = (wa / a * wp / b).sum(-1)
    sn = torch.einsum("bd,bkd->bk", wa / a, wn / c)
    logits = torch.cat([s0[:, None], sn], 1) if variant == "standard" else sn
    loss = -beta * s0 + torch.logsumexp(beta * logits, 1)
    ga, gp, gn = torch.autograd.grad(loss.sum(), (wa, wp, wn))
    norm = torch.sqrt((ga**2).sum(-1) + (gp**2).sum(-1) + (gn**2).sum((-1, -2)))
    assert float(norm.max()) <= beta * math.sqrt(4 / a**2 + 1 / b**2 + pm / c**2) * (1 + 1e-12)


def test_vector_contraction_bound_hand_value_and_k_uniformity():
    # NormalisedLinear(3, 1/2) at n = 2048, k = 16, tau = 1/2: sqrt2 beta (3 + sqrt(k p_max)) (r/(1-r)) sqrt(d/n)
    beta, k, n = 2.0, 16, 2048
    kp = k * math.exp(4) / (math.exp(4) + k)
    expected = math.sqrt(2) * beta * (3 + math.sqrt(kp)) * 1.0 * math.sqrt(3 / n)
    got = vector_contraction_bound(n, k, 0.5, radius=0.5, dim_out=3, post_lipschitz=2.0)
    assert got == pytest.approx(expected, rel=1e-14)
    # bounded uniformly in k by the k -> infinity value sqrt2 beta (3 + e^beta) ...
    limit = math.sqrt(2) * beta * (3 + math.exp(beta)) * math.sqrt(3 / n)
    assert all(vector_contraction_bound(n, kk, 0.5, radius=0.5, dim_out=3, post_lipschitz=2.0) < limit
               for kk in (1, 16, 10**4, 10**9))
    # ... and the BallLinear form with second moments m: sqrt2 beta D sqrt(d_out/n)(2 sqrt m + sqrt m + sqrt(k p m))
    got = vector_contraction_bound(1024, 16, 1.0, radius=0.05, dim_out=4, m2_anchor=8.0, m2_positive=8.0,
                                   m2_negatives=8.0)
    kp1 = 16 * math.exp(2) / (math.exp(2) + 16)
    assert got == pytest.approx(math.sqrt(2) * 0.05 * math.sqrt(4 / 1024) * math.sqrt(8) * (3 + math.sqrt(kp1)),
                                rel=1e-14)


@pytest.mark.slow
def test_vector_contraction_bound_lies_above_the_rademacher_estimate():
    """The empirical Rademacher estimate is a lower estimate of R_hat_n; the bound must lie above
    the upper end of its interval (NormalisedLinear on vMF data, and BallLinear on Gaussian data
    with the sample's second moments)."""
    gen = torch.Generator().manual_seed(3)
    for phi, model, post in ((NormalisedLinear(3, 0.5), VonMisesFisher(3, 2.0), 2.0),
                             (BallLinear(8, 4, scale=0.25, radius=0.05), GaussianModel(8, 0.8), 1.0)):
        n, k, tau = 64, 8, 0.5
        data = model.sample_tuples(n, k, generator=gen)
        est = empirical_rademacher(phi, data, 6, tau=tau, steps=25, n_starts=1, seed=1)
        m2 = [float((t**2).sum(-1).mean()) for t in data]
        vec = vector_contraction_bound(n, k, tau, radius=phi.radius, dim_out=phi.output_dim, m2_anchor=m2[0],
                                       m2_positive=m2[1], m2_negatives=m2[2], post_lipschitz=post)
        assert est.ci_high <= vec
        with torch.no_grad():
            L = [phi.lipschitz(t).numpy() for t in data]
        lam = embedding_lipschitz_constant(*L, tau)
        assert est.ci_high <= rademacher_covering_bound(float(np.sqrt(np.mean(lam**2))), phi.radius, phi.n_params, n)


@pytest.mark.parametrize("bad, match", [
    (dict(L_anchor=np.array([-1.0])), "L_anchor"), (dict(L_negatives=np.array([1.0])), "shapes"),
    (dict(tau=0.0), "tau"), (dict(variant="other"), "variant"),
    (dict(L_positive=np.array([np.nan])), "L_positive")])
def test_embedding_constant_rejects_bad_input(bad, match):
    args = dict(L_anchor=np.array([1.0]), L_positive=np.array([1.0]), L_negatives=np.array([[1.0, 2.0]]), tau=1.0)
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        embedding_lipschitz_constant(**args)
    with pytest.raises(ValueError, match="gamma"):
        tunable_lipschitz_constant(np.array([1.0]), np.array([1.0]), np.array([[1.0]]), 1.0, gamma=0.0)
    with pytest.raises(ValueError, match="radius"):
        vector_contraction_bound(10, 4, 1.0, radius=-1.0, dim_out=3)
