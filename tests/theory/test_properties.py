"""Property tests (hypothesis) over random shapes, temperatures and dtypes for the loss, bound,
estimator and search entry points that lacked one: finite outputs of the right shape, and the
invariances the theory gives (each test's name states its property)."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from infonce_book.losses import info_nce, info_nce_from_similarities, info_nce_streaming
from infonce_book.theory.bounds import (
    antipodal_kl,
    bias_bounds,
    continuity_bound,
    kl_softmax_bound,
    loss_lipschitz_constant,
    loss_range,
    theorem1_terms,
)
from infonce_book.theory.search import (
    empirical_kl_softmax,
    ideal_search_log_kernel,
    positive_rank,
    search_cross_entropy,
    softmax_search_log_kernel,
)
from infonce_book.theory.stats import Estimate, coverage_interval, fit_loglog_slope

taus = st.floats(min_value=math.log(1e-4), max_value=math.log(1e2)).map(math.exp)
variants = st.sampled_from(["standard", "decoupled"])
float_dtypes = st.sampled_from([torch.float64, torch.float32, torch.float16, torch.bfloat16])
seeds = st.integers(0, 2**31 - 1)
SETTINGS = settings(max_examples=25, deadline=None)


def unit(shape, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64)
    return (x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)).to(dtype)


def cosines(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=g, dtype=torch.float64) * 2 - 1


# ---------------------------------------------------------------------------------------------
# Losses


@SETTINGS
@given(B=st.integers(1, 5), k=st.integers(1, 40), d=st.integers(2, 9), tau=taus, variant=variants,
       dtype=float_dtypes, shared=st.booleans(), chunk=st.one_of(st.none(), st.integers(1, 16)), seed=seeds)
def test_info_nce_is_finite_with_the_documented_shape_and_dtype_for_any_input(B, k, d, tau, variant, dtype, shared,
                                                                              chunk, seed):
    a, p = unit((B, d), seed, dtype), unit((B, d), seed + 1, dtype)
    n = unit((k, d) if shared else (B, k, d), seed + 2, dtype)
    ins = [t.clone().requires_grad_() for t in (a, p, n)]
    per = info_nce(*ins, tau, variant=variant, reduction="none", chunk_size=chunk)
    assert per.shape == (B,) and per.dtype == torch.promote_types(dtype, torch.float32)
    assert torch.isfinite(per).all()
    if variant == "standard":
        assert (per >= 0).all()  # log(1 + sum e^z) >= 0
    per.sum().backward()
    for t in ins:
        assert t.grad.shape == t.shape and t.grad.dtype == dtype and torch.isfinite(t.grad).all()
    torch.testing.assert_close(info_nce(a, p, n, tau, variant=variant, reduction="mean", chunk_size=chunk),
                               per.detach().mean())


@SETTINGS
@given(B=st.integers(1, 4), k=st.integers(2, 30), d=st.integers(2, 6), tau=taus, variant=variants,
       shared=st.booleans(), seed=seeds)
def test_info_nce_is_invariant_to_permuting_the_negatives(B, k, d, tau, variant, shared, seed):
    a, p = unit((B, d), seed), unit((B, d), seed + 1)
    n = unit((k, d) if shared else (B, k, d), seed + 2)
    perm = torch.randperm(k, generator=torch.Generator().manual_seed(seed))
    n_perm = n[perm] if shared else n[:, perm]
    torch.testing.assert_close(info_nce(a, p, n_perm, tau, variant=variant, reduction="none", chunk_size=3),
                               info_nce(a, p, n, tau, variant=variant, reduction="none"), rtol=1e-12, atol=1e-12)


@SETTINGS
@given(B=st.integers(1, 4), k=st.integers(1, 50), d=st.integers(2, 6), tau=taus, seed=seeds)
def test_info_nce_equals_log_k_plus_1_when_every_candidate_is_as_similar_as_the_positive(B, k, d, tau, seed):
    # Negatives equal to the positive: every similarity equals s+, so l = log(k + 1) (chance),
    # and log k for the decoupled variant.
    a, p = unit((B, d), seed), unit((B, d), seed + 1)
    n = p[:, None, :].expand(B, k, d).clone()
    std = info_nce(a, p, n, tau, reduction="none", chunk_size=7)
    dec = info_nce(a, p, n, tau, variant="decoupled", reduction="none")
    # The similarities s_j and s+ are the same dot product; the embedding path folds the
    # difference into one matrix multiply, so allow its rounding (about eps64 / tau).
    torch.testing.assert_close(std, torch.full_like(std, math.log(k + 1)), rtol=0, atol=1e-14 / tau + 1e-14)
    torch.testing.assert_close(dec, torch.full_like(dec, math.log(k)), rtol=0, atol=1e-14 / tau + 1e-14)


@SETTINGS
@given(B=st.integers(1, 4), k=st.integers(1, 30), tau=taus, variant=variants, seed=seeds,
       step=st.floats(1e-3, 1.0))
def test_the_loss_decreases_as_the_positive_becomes_more_similar(B, k, tau, variant, seed, step):
    s_pos, s_neg = cosines((B,), seed) * 0.5, cosines((B, k), seed + 1)
    before = info_nce_from_similarities(s_pos, s_neg, tau, variant=variant, reduction="none")
    after = info_nce_from_similarities(s_pos + step * 0.5, s_neg, tau, variant=variant, reduction="none")
    assert (after <= before).all()
    if variant == "decoupled":  # exactly beta * step lower
        torch.testing.assert_close(before - after, torch.full_like(before, step * 0.5 / tau), rtol=1e-9, atol=1e-9)
    # ... and increases with any negative's similarity (the gradient is beta p_j > 0).
    s_neg2 = s_neg.clone()
    s_neg2[:, 0] += step * 0.1
    assert (info_nce_from_similarities(s_pos, s_neg2, tau, variant=variant, reduction="none") >= before).all()


@SETTINGS
@given(B=st.integers(1, 4), k=st.integers(1, 60), tau=taus, variant=variants, seed=seeds,
       cuts=st.lists(st.integers(1, 59), max_size=5), dtype=st.sampled_from([torch.float64, torch.float32]))
def test_streaming_gives_the_same_loss_for_any_chunking_and_is_invariant_to_permutation(B, k, tau, variant, seed,
                                                                                        cuts, dtype):
    s_pos, s_neg = cosines((B,), seed).to(dtype), cosines((B, k), seed + 1).to(dtype)
    bounds = sorted({c for c in cuts if c < k} | {0, k})
    chunks = [s_neg[:, lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]
    want = info_nce_from_similarities(s_pos, s_neg, tau, variant=variant, reduction="none")
    got = info_nce_streaming(s_pos, chunks, tau, variant=variant, reduction="none")
    assert got.shape == (B,) and got.dtype == want.dtype
    rtol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(got, want, rtol=rtol, atol=1e-300)
    perm = torch.randperm(k, generator=torch.Generator().manual_seed(seed))
    torch.testing.assert_close(info_nce_streaming(s_pos, [s_neg[:, perm]], tau, variant=variant, reduction="none"),
                               want, rtol=rtol, atol=1e-300)


@SETTINGS
@given(B=st.integers(1, 4), k=st.integers(1, 10**4), tau=taus, seed=seeds, variant=variants)
def test_the_loss_lies_in_the_range_whose_width_is_loss_range(B, k, tau, seed, variant):
    # For similarities in [-1, 1]: standard l in [log(1 + k e^{-2b}), log(1 + k e^{2b})],
    # decoupled in [log k - 2b, log k + 2b]; the width is loss_range(k, tau).
    beta = 1.0 / tau
    kk = min(k, 300)
    s_pos, s_neg = cosines((B,), seed), cosines((B, kk), seed + 1)
    loss = info_nce_from_similarities(s_pos, s_neg, tau, variant=variant, reduction="none").numpy()
    if variant == "standard":
        lo = math.log1p(kk * math.exp(-2 * beta))
        hi = 2 * beta + math.log(kk) + math.log1p(math.exp(-2 * beta) / kk)
    else:
        lo, hi = math.log(kk) - 2 * beta, math.log(kk) + 2 * beta
    slack = 1e-12 * max(1.0, abs(hi))
    assert np.all(loss >= lo - slack) and np.all(loss <= hi + slack)
    width = loss_range(k, tau, variant=variant)
    assert math.isfinite(width) and 0 < width <= 4 * beta * (1 + 1e-15)
    if variant == "standard":
        assert loss_range(kk, tau) == pytest.approx(hi - lo, rel=1e-12, abs=1e-300)
        assert loss_range(k + 1, tau) >= width  # the range widens with k, towards 4 beta


# ---------------------------------------------------------------------------------------------
# Bounds


@SETTINGS
@given(ks=st.lists(st.integers(1, 10**6), min_size=1, max_size=6), n_values=st.integers(1, 8), seed=seeds,
       variant=variants)
def test_bias_bounds_of_any_discrete_law_are_finite_ordered_and_shaped_like_k(ks, n_values, seed, variant):
    # A law of the weights with finitely many values: W_i with probabilities p_i (negatives) and
    # q_i (positive); U = W+/mu, V = W/mu; a = min V is a valid lower bound on T.
    rng = np.random.default_rng(seed)
    W, p, q = rng.uniform(0.1, 10.0, n_values), rng.dirichlet(np.ones(n_values)), rng.dirichlet(np.ones(n_values))
    mu = p @ W
    u1, u2, v2 = q @ (W / mu), q @ (W / mu) ** 2, p @ (W / mu - 1) ** 2
    a = min(1.0, W.min() / mu)
    lower, upper = bias_bounds(ks, u1=u1, u2=u2, v2=v2, a=a, variant=variant)
    kk = np.asarray(ks, dtype=float)
    assert lower.shape == upper.shape == kk.shape
    assert np.all(np.isfinite(lower)) and np.all(np.isfinite(upper)) and np.all(lower <= upper + 1e-12)
    if variant == "standard":
        assert np.all(upper <= u1 / kk * (1 + 1e-12))  # log(1 + x) <= x
    else:
        assert np.all(upper == 0)


@SETTINGS
@given(t1=taus, t2=taus)
def test_kl_bound_is_positive_decreasing_in_tau_and_holds_for_the_antipodal_case(t1, t2):
    lo, hi = sorted((t1, t2))
    assert kl_softmax_bound(lo) >= kl_softmax_bound(hi) > 0
    assert 0 <= antipodal_kl(hi) <= kl_softmax_bound(hi) * (1 + 1e-12)
    assert math.isfinite(kl_softmax_bound(lo))


@SETTINGS
@given(B=st.integers(1, 4), k=st.integers(1, 30), tau=st.floats(0.05, 100.0), seed=seeds, variant=variants,
       kind=st.sampled_from(["average", "max", "dv"]))
def test_continuity_bounds_are_finite_nonnegative_and_invariant_to_permuting_negatives(B, k, tau, seed, variant,
                                                                                       kind):
    sp, sn = cosines((B,), seed).numpy(), cosines((B, k), seed + 1).numpy()
    sp2, sn2 = np.clip(sp + 0.1, -1, 1), cosines((B, k), seed + 2).numpy()
    got = continuity_bound(sp, sn, sp2, sn2, tau, kind=kind, variant=variant)
    assert got.shape == (B,) and np.all(np.isfinite(got)) and np.all(got >= 0)
    perm = np.random.default_rng(seed).permutation(k)
    np.testing.assert_allclose(continuity_bound(sp, sn[:, perm], sp2, sn2[:, perm], tau, kind=kind, variant=variant),
                               got, rtol=1e-12)
    # No change, no bound.
    np.testing.assert_array_equal(continuity_bound(sp, sn, sp, sn, tau, kind=kind, variant=variant), np.zeros(B))


@SETTINGS
@given(B=st.integers(1, 4), k=st.integers(1, 30), tau=st.floats(0.05, 100.0), seed=seeds, variant=variants)
def test_lipschitz_constants_are_finite_monotone_and_the_average_ignores_the_order_of_negatives(B, k, tau, seed,
                                                                                              variant):
    rng = np.random.default_rng(seed)
    La, Lp, Ln = rng.uniform(0, 3, B), rng.uniform(0, 3, B), rng.uniform(0, 3, (B, k))
    for kind in ("average", "max"):
        got = loss_lipschitz_constant(La, Lp, Ln, tau, kind=kind, variant=variant)
        assert got.shape == (B,) and np.all(np.isfinite(got)) and np.all(got >= 0)
        bigger = loss_lipschitz_constant(La, Lp, Ln + 1.0, tau, kind=kind, variant=variant)
        assert np.all(bigger >= got)
        np.testing.assert_allclose(loss_lipschitz_constant(La, Lp, Ln[:, rng.permutation(k)], tau, kind=kind,
                                                           variant=variant), got, rtol=1e-12)


@SETTINGS
@given(train=st.floats(0.0, 20.0), k=st.integers(1, 10**6), n=st.integers(1, 10**6), tau=st.floats(0.01, 100.0),
       delta=st.floats(1e-6, 0.999), rad=st.floats(0.0, 10.0), const=st.one_of(st.none(), st.floats(0.0, 1e6)))
def test_theorem1_bound_is_the_sum_of_its_finite_terms_and_tightens_with_n(train, k, n, tau, delta, rad, const):
    terms = theorem1_terms(train_risk=train, k=k, n=n, tau=tau, delta=delta, rademacher=rad, search_constant=const)
    parts = ["empirical_risk", "complexity", "confidence"] + ([] if const is None else ["search_bias"])
    assert terms["bound"] == pytest.approx(sum(terms[p] for p in parts), rel=1e-12, abs=1e-12)
    assert all(math.isfinite(terms[p]) for p in parts) and terms["confidence"] >= 0
    more = theorem1_terms(train_risk=train, k=k, n=4 * n, tau=tau, delta=delta, rademacher=rad, search_constant=const)
    assert more["confidence"] == pytest.approx(terms["confidence"] / 2, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# Estimators and fits


@SETTINGS
@given(x=st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=50), level=st.floats(0.5, 0.999))
def test_estimate_interval_is_centred_on_the_mean_and_widens_with_the_level(x, level):
    e = Estimate.from_samples(np.array(x), level=level)
    wider = Estimate.from_samples(np.array(x), level=(1 + level) / 2)
    assert e.n == len(x) and e.se >= 0 and math.isfinite(e.mean)
    assert e.ci[0] <= e.mean <= e.ci[1] and wider.half_width >= e.half_width
    assert e.mean == pytest.approx(float(np.mean(x)), rel=1e-12, abs=1e-6)


@SETTINGS
@given(slope=st.floats(-3.0, 3.0), scale=st.floats(1e-3, 1e3), n=st.integers(3, 8))
def test_loglog_fit_recovers_any_exact_power_law(slope, scale, n):
    k = 2.0 ** np.arange(n)
    fit = fit_loglog_slope(k, scale * k**slope, 0.01 * scale * k**slope)
    assert fit.mean == pytest.approx(slope, abs=1e-9) and fit.ci_low <= fit.mean <= fit.ci_high


@SETTINGS
@given(n=st.integers(1, 5000), frac=st.floats(0.0, 1.0), level=st.floats(0.5, 0.999))
def test_coverage_interval_contains_the_observed_fraction_and_lies_in_0_1(n, frac, level):
    hits = int(round(frac * n))
    lo, hi = coverage_interval(hits, n, level)
    assert 0.0 <= lo <= hits / n <= hi <= 1.0


# ---------------------------------------------------------------------------------------------
# Similarity search


@SETTINGS
@given(B=st.integers(1, 5), k=st.integers(1, 40), tau=taus, seed=seeds, shift=st.floats(-5, 5),
       dtype=st.sampled_from([torch.float64, torch.float32, torch.bfloat16]))
def test_search_kernels_are_probabilities_invariant_to_a_shift_per_query(B, k, tau, seed, shift, dtype):
    s = cosines((B, k), seed).to(dtype)
    log_q = softmax_search_log_kernel(s, tau)
    assert log_q.shape == (B, k) and torch.isfinite(log_q).all()
    # Rows sum to one up to the rounding of logits of size up to 1/tau in the dtype (float32 for
    # bfloat16 inputs, which are computed in float32).
    eps = torch.finfo(torch.promote_types(dtype, torch.float32)).eps
    torch.testing.assert_close(torch.logsumexp(log_q.double(), -1), torch.zeros(B, dtype=torch.float64),
                               rtol=0, atol=4 * eps * (1 + 1 / tau))
    log_m = cosines((B, k), seed + 1) * 3
    torch.testing.assert_close(ideal_search_log_kernel(log_m + shift), ideal_search_log_kernel(log_m),
                               rtol=1e-9, atol=1e-9)
    if dtype == torch.float64:
        torch.testing.assert_close(softmax_search_log_kernel(s + shift * tau, tau), log_q, rtol=1e-9, atol=1e-9)
    h = search_cross_entropy(s, log_m.to(dtype), tau)
    assert h.shape == (B,) and torch.isfinite(h).all() and (h >= -1e-6).all()


@SETTINGS
@given(B=st.integers(1, 5), k=st.integers(1, 40), seed=seeds)
def test_positive_rank_is_between_1_and_k_plus_1_and_ignores_the_database_order(B, k, seed):
    pos, db = cosines((B,), seed), cosines((B, k), seed + 1)
    r = positive_rank(pos, db)
    assert r.shape == (B,) and ((r >= 1) & (r <= k + 1)).all()
    perm = torch.randperm(k, generator=torch.Generator().manual_seed(seed))
    assert torch.equal(positive_rank(pos, db[:, perm]), r)


@SETTINGS
@given(B=st.integers(1, 4), n=st.integers(1, 60), d=st.integers(2, 6), tau=taus, seed=seeds, shared=st.booleans())
def test_empirical_kl_of_the_search_lies_between_0_and_the_uniform_bound(B, n, d, tau, seed, shared):
    q = unit((B, d), seed)
    sample = unit((n, d) if shared else (B, n, d), seed + 1)
    kl = empirical_kl_softmax(q, sample, tau)
    assert kl.shape == (B,) and torch.isfinite(kl).all()
    # KL(Q || pi_hat) <= min(beta^2/2, 2 beta) holds for the empirical pi_hat too (book, C3).
    assert (kl >= -1e-9).all() and (kl <= kl_softmax_bound(tau) * (1 + 1e-9) + 1e-9).all()
