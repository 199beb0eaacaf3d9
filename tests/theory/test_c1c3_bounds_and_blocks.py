"""New bounds of the C2 and C3 chapters, the block (NT-Xent) quadrature and the in-batch estimator,
each against an independent computation."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from infonce_book.models import VonMisesFisher
from infonce_book.theory import bounds, estimators
from infonce_book.theory.exact import exact_bias, expected_log_T_blocks, snis_bias


def test_search_bias_constant_l2_is_the_closed_form():
    # beta (2 R - 3/2) + e^{2 beta} at tau = 0.5, R = 4: 2 * 6.5 + e^4
    assert bounds.search_bias_constant_l2(0.5, second_moment=4.0) == pytest.approx(13.0 + math.exp(4.0), rel=1e-15)
    with pytest.raises(ValueError, match="second_moment"):
        bounds.search_bias_constant_l2(0.5, second_moment=0.9)


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=2, max_value=6), st.integers(min_value=0, max_value=10**6))
def test_snis_bias_is_within_the_lemma_constant_for_any_discrete_law(n_values, seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n_values))
    m = rng.exponential(size=n_values) + 1e-3
    m = m / (p @ m)  # E_p m = 1
    f = rng.uniform(-1, 1, size=n_values)
    ks = [1, 2, 4, 16, 64]
    bias, _ = snis_bias(m, f, p, ks)  # exact (Laplace quadrature), independent of the bound
    i_s = p @ (m * f)
    var_m, var_mf = p @ m**2 - 1, p @ (m * f) ** 2 - i_s**2
    cov = p @ (m**2 * (f - i_s))
    b_s = bounds.snis_bias_constant(var_m=var_m, var_mf=var_mf, cov_mf=cov, mean_f=i_s)
    assert b_s <= 2 * (p @ m**2) - 1.5 + 1e-12
    assert np.all(np.abs(np.array(ks) * bias) <= b_s * (1 + 1e-9) + 1e-12)


@pytest.mark.parametrize("tau", [2.0, 0.5, 0.2, 0.05])
def test_sharp_kl_bound_is_the_maximum_over_two_point_laws(tau):
    res = optimize.minimize_scalar(lambda lq: -bounds.two_point_kl(tau, 1 / (1 + math.exp(-lq))), bounds=(-90, 20),
                                   method="bounded", options={"xatol": 1e-12})
    assert -res.fun == pytest.approx(bounds.kl_softmax_sharp_bound(tau), abs=1e-9)
    assert bounds.kl_softmax_sharp_bound(tau) <= bounds.kl_softmax_bound(tau)


def test_two_point_kl_at_one_half_is_the_antipodal_kl():
    assert bounds.two_point_kl(0.7, 0.5) == pytest.approx(bounds.antipodal_kl(0.7), rel=1e-14)


def test_block_quadrature_with_one_negative_per_block_is_the_frullani_quadrature():
    model = VonMisesFisher(3, 4.0)
    laws = next(model.anchor_laws(2.0))[1]
    ks = [1, 3, 16, 256, 4096]
    vals, errs = expected_log_T_blocks(laws.W, laws.w_neg, laws.W, laws.w_pos, ks)
    ref = exact_bias(model, ks, 0.5)  # quad_vec on the Ein closed form (independent integrator)
    assert np.all(np.abs(vals - ref) <= errs)
    assert np.all(np.abs(vals - ref) < 1e-12)


def test_pairs_of_independent_negatives_are_twice_as_many_negatives():
    # Blocks S = V + V' with V, V' independent copies: sum of n blocks = sum of 2n single negatives.
    model = VonMisesFisher(3, 1.0)
    laws = next(model.anchor_laws(1.0, closed_form=False, n_nodes=48))[1]
    S = np.add.outer(laws.W, laws.W).ravel()
    wS = np.outer(laws.w_neg, laws.w_neg).ravel()
    n = [1, 4, 32]
    pairs, _ = expected_log_T_blocks(S, wS, laws.W, laws.w_pos, n, block=2)
    single, _ = expected_log_T_blocks(laws.W, laws.w_neg, laws.W, laws.w_pos, [2 * q for q in n])
    np.testing.assert_allclose(pairs, single, rtol=0, atol=1e-12)


def test_block_quadrature_rejects_bad_input():
    with pytest.raises(ValueError, match="block"):
        expected_log_T_blocks([1.0], [1.0], [1.0], [1.0], [1], block=3)
    with pytest.raises(ValueError, match="block_weights"):
        expected_log_T_blocks([1.0, 2.0], [0.2, 0.2], [1.0], [1.0], [1])


def _rows_by_loops(a, p, tau, form):
    """The in-batch losses of one batch by explicit loops in float64 (reference)."""
    B = a.shape[0]
    beta = 1.0 / tau
    out = []
    if form == "clip":
        for direction in (0, 1):
            for i in range(B):
                if direction == 0:
                    z = [beta * float(a[i] @ p[j]) for j in range(B)]
                else:
                    z = [beta * float(a[j] @ p[i]) for j in range(B)]
                out.append(-beta * float(a[i] @ p[i]) + math.log(sum(math.exp(v) for v in z)))
        return np.array(out)
    views = torch.cat([a, p])
    for i in range(2 * B):
        partner = (i + B) % (2 * B)
        z = [beta * float(views[i] @ views[j]) for j in range(2 * B) if j != i]
        out.append(-beta * float(views[i] @ views[partner]) + math.log(sum(math.exp(v) for v in z)))
    return np.array(out)


@pytest.mark.parametrize("form", ["clip", "nt_xent"])
def test_in_batch_rows_match_explicit_loops(form):
    gen = torch.Generator().manual_seed(3)
    a = torch.nn.functional.normalize(torch.randn(5, 4, generator=gen, dtype=torch.float64), dim=-1)
    p = torch.nn.functional.normalize(torch.randn(5, 4, generator=gen, dtype=torch.float64), dim=-1)
    loss, _ = estimators.in_batch_row_log_terms(a[None], p[None], 0.3, form)
    np.testing.assert_allclose(loss.reshape(-1).numpy(), _rows_by_loops(a, p, 0.3, form), rtol=1e-13)


@pytest.mark.parametrize("form", ["clip", "nt_xent"])
def test_in_batch_monte_carlo_covers_the_exact_value(form):
    model = VonMisesFisher(3, 4.0)
    r = estimators.monte_carlo_in_batch_bias(model, 4, 0.5, 4000, form=form, device="cpu", seed=11)
    exact = model.exact_in_batch_bias([4], 0.5, form)[0][0]  # pair-law quadrature / Frullani
    assert r["cv"].at_level(0.999).contains(exact)
    assert r["k"] == (3 if form == "clip" else 6)


def test_in_batch_negatives_and_errors():
    assert estimators.in_batch_negatives("clip", 8) == 7 and estimators.in_batch_negatives("nt_xent", 8) == 14
    with pytest.raises(ValueError, match="batch_size"):
        estimators.in_batch_negatives("clip", 1)


def test_the_in_batch_estimator_scores_rows_as_the_library_losses_do():
    # The chapter's Monte Carlo (float64 masked log-sum-exp, many batches at once) measures the
    # losses practitioners call: infonce_book.losses.info_nce_in_batch (both directions) and nt_xent.
    import torch

    from infonce_book.losses import info_nce_in_batch, nt_xent
    from infonce_book.theory.estimators import in_batch_row_log_terms

    g = torch.Generator().manual_seed(3)
    a, p = (torch.nn.functional.normalize(torch.randn(2, 6, 4, generator=g, dtype=torch.float64), dim=-1)
            for _ in range(2))
    clip, _ = in_batch_row_log_terms(a, p, 0.3, "clip")
    nt, _ = in_batch_row_log_terms(a, p, 0.3, "nt_xent")
    for i in range(2):
        torch.testing.assert_close(clip[i, 0], info_nce_in_batch(a[i], p[i], 0.3, reduction="none", symmetric=False),
                                   rtol=1e-13, atol=1e-13)
        torch.testing.assert_close(clip[i, 1], info_nce_in_batch(p[i], a[i], 0.3, reduction="none", symmetric=False),
                                   rtol=1e-13, atol=1e-13)
        torch.testing.assert_close(nt[i], nt_xent(a[i], p[i], 0.3, reduction="none"), rtol=1e-13, atol=1e-13)
