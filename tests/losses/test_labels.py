"""Labels (false negatives left out), extra hard negatives, SupCon, and CLIP's logit_scale: values
and gradients against float64 references written here from the papers' formulas, one row at a
time (declared tolerances: float64 relative 1e-12, float32 relative 2e-5 on values and
normwise on gradients, for similarity gaps up to 2/tau = 20)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from infonce_book.losses import (
    InBatchInfoNCELoss,
    NTXentLoss,
    SupConLoss,
    info_nce_in_batch,
    nt_xent,
    supcon,
)

F64 = torch.float64


def unit(*shape, seed=0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(*shape, generator=g, dtype=F64), dim=-1).to(dtype)


def _row(s_pos, s_negs, tau, standard):
    terms = [s / tau for s in s_negs] + ([s_pos / tau] if standard else [])
    return torch.logsumexp(torch.stack(terms), 0) - s_pos / tau


def clip_reference(z1, z2, tau, labels=None, negatives=None, symmetric=False, variant="standard"):
    """CLIP's loss per pair, one row at a time: row i's negatives are the z2_j with another label
    (all j != i without labels) and the extra negatives of row i."""
    B, standard = z1.shape[0], variant == "standard"
    lab = labels if labels is not None else torch.arange(B)
    rows, cols = [], []
    for i in range(B):
        negs = [z1[i] @ z2[j] for j in range(B) if j != i and lab[j] != lab[i]]
        if negatives is not None:
            extra = negatives if negatives.dim() == 2 else negatives[i]
            negs += [z1[i] @ e for e in extra]
        rows.append(_row(z1[i] @ z2[i], negs, tau, standard) if negs or not standard else torch.zeros((), dtype=F64))
        cneg = [z2[i] @ z1[j] for j in range(B) if j != i and lab[j] != lab[i]]
        cols.append(_row(z2[i] @ z1[i], cneg, tau, standard) if cneg else torch.zeros((), dtype=F64))
    rows = torch.stack(rows)
    return rows * 0.5 + torch.stack(cols) * 0.5 if symmetric else rows


def ntxent_reference(z1, z2, tau, labels=None, negatives=None, variant="standard"):
    B = z1.shape[0]
    v = torch.cat([z1, z2])
    lab = torch.cat([labels, labels]) if labels is not None else torch.arange(2 * B).remainder(B)
    out = []
    for i in range(2 * B):
        p = (i + B) % (2 * B)
        negs = [v[i] @ v[j] for j in range(2 * B) if j not in (i, p) and lab[j] != lab[i]]
        if negatives is not None:
            extra = negatives if negatives.dim() == 2 else negatives[i % B]
            negs += [v[i] @ e for e in extra]
        out.append(_row(v[i] @ v[p], negs, tau, variant == "standard") if negs else torch.zeros((), dtype=F64))
    return torch.stack(out)


def supcon_reference(z1, z2, labels, tau, negatives=None):
    """Khosla et al. (2020), eq. 2, written as in the paper: for each view, minus the mean over
    its positives of the log of the positive's softmax over all other views."""
    B = z1.shape[0]
    v = torch.cat([z1, z2])
    lab = torch.cat([labels, labels])
    out = []
    for i in range(2 * B):
        others = [j for j in range(2 * B) if j != i]
        logits = [v[i] @ v[j] / tau for j in others]
        if negatives is not None:
            extra = negatives if negatives.dim() == 2 else negatives[i % B]
            logits += [v[i] @ e / tau for e in extra]
        log_den = torch.logsumexp(torch.stack(logits), 0)
        pos = [v[i] @ v[j] / tau - log_den for j in others if lab[j] == lab[i]]
        out.append(-torch.stack(pos).mean())
    return torch.stack(out)


LABELS = torch.tensor([0, 1, 0, 2, 1, 0, 3, 2])
B, D = 8, 5


@pytest.mark.parametrize("variant", ["standard", "decoupled"])
@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("extra", [None, "shared", "per_row"])
@pytest.mark.parametrize("chunk_size", [None, 3])
def test_clip_with_labels_and_hard_negatives_matches_the_float64_reference(variant, symmetric, extra, chunk_size):
    z1, z2 = unit(B, D, seed=1), unit(B, D, seed=2)
    neg = None if extra is None else unit(*((4, D) if extra == "shared" else (B, 3, D)), seed=3)
    tau = torch.tensor(0.1, dtype=F64, requires_grad=True)
    ins = [x.clone().requires_grad_(True) for x in (z1, z2)]
    got = info_nce_in_batch(*ins, tau, labels=LABELS, negatives=neg, symmetric=symmetric, variant=variant,
                            reduction="none", chunk_size=chunk_size)
    ref_in = [x.clone().requires_grad_(True) for x in (z1, z2)]
    tau_r = torch.tensor(0.1, dtype=F64, requires_grad=True)
    want = clip_reference(*ref_in, tau_r, LABELS, neg, symmetric, variant)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    g = torch.autograd.grad(got.sum(), [*ins, tau])
    w = torch.autograd.grad(want.sum(), [*ref_in, tau_r])
    for a, b in zip(g, w):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("variant", ["standard", "decoupled"])
@pytest.mark.parametrize("extra", [None, "shared", "per_row"])
@pytest.mark.parametrize("chunk_size", [None, 5])
def test_nt_xent_with_labels_and_hard_negatives_matches_the_float64_reference(variant, extra, chunk_size):
    z1, z2 = unit(B, D, seed=4), unit(B, D, seed=5)
    neg = None if extra is None else unit(*((4, D) if extra == "shared" else (B, 3, D)), seed=6)
    ins = [x.clone().requires_grad_(True) for x in (z1, z2)]
    got = nt_xent(*ins, 0.2, labels=LABELS, negatives=neg, variant=variant, reduction="none", chunk_size=chunk_size)
    ref_in = [x.clone().requires_grad_(True) for x in (z1, z2)]
    want = ntxent_reference(*ref_in, 0.2, LABELS, neg, variant)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    for a, b in zip(torch.autograd.grad(got.sum(), ins), torch.autograd.grad(want.sum(), ref_in)):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("extra", [None, "shared", "per_row"])
@pytest.mark.parametrize("chunk_size", [None, 3])
def test_supcon_matches_the_float64_reference_of_the_paper(extra, chunk_size):
    z1, z2 = unit(B, D, seed=7), unit(B, D, seed=8)
    neg = None if extra is None else unit(*((4, D) if extra == "shared" else (B, 3, D)), seed=9)
    ins = [x.clone().requires_grad_(True) for x in (z1, z2)]
    got = supcon(*ins, LABELS, 0.1, negatives=neg, reduction="none", chunk_size=chunk_size)
    ref_in = [x.clone().requires_grad_(True) for x in (z1, z2)]
    want = supcon_reference(*ref_in, LABELS, 0.1, neg)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    for a, b in zip(torch.autograd.grad(got.mean(), ins), torch.autograd.grad(want.mean(), ref_in)):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_float32_with_labels_is_within_its_declared_tolerance_of_float64():
    z1, z2 = unit(64, 16, seed=10), unit(64, 16, seed=11)
    labels = torch.arange(64) % 7
    for fn in (lambda a, b: info_nce_in_batch(a, b, 0.1, labels=labels, reduction="none"),
               lambda a, b: nt_xent(a, b, 0.1, labels=labels, reduction="none"),
               lambda a, b: supcon(a, b, labels, 0.1, reduction="none")):
        want = fn(z1, z2)
        got = fn(z1.float(), z2.float())
        assert got.dtype == torch.float32
        assert ((got.double() - want).abs() / want.abs()).max() <= 2e-5


def test_same_label_items_are_never_negatives():
    # Row i's loss must not depend on a candidate that shares its label (other than its positive).
    z1, z2 = unit(B, D, seed=12), unit(B, D, seed=13)
    moved = z2.clone()
    moved[2] = unit(D, seed=14)  # item 2 shares label 0 with items 0 and 5
    for fn in (lambda a, b: info_nce_in_batch(a, b, 0.1, labels=LABELS, symmetric=False, reduction="none"),
               lambda a, b: nt_xent(a, b, 0.1, labels=LABELS, reduction="none")):
        before, after = fn(z1, z2), fn(z1, moved)
        for i in (0, 5):
            assert before[i] == after[i]
        assert before[1] != after[1]  # a row of another label does see it


def test_distinct_labels_equal_the_unlabelled_forms_and_supcon_equals_nt_xent():
    z1, z2 = unit(B, D, seed=15), unit(B, D, seed=16)
    distinct = torch.arange(B)
    for sym in (False, True):
        torch.testing.assert_close(info_nce_in_batch(z1, z2, 0.3, labels=distinct, symmetric=sym),
                                   info_nce_in_batch(z1, z2, 0.3, symmetric=sym), rtol=1e-13, atol=0)
    torch.testing.assert_close(nt_xent(z1, z2, 0.3, labels=distinct), nt_xent(z1, z2, 0.3), rtol=1e-13, atol=0)
    torch.testing.assert_close(supcon(z1, z2, distinct, 0.3), nt_xent(z1, z2, 0.3), rtol=1e-13, atol=0)


def test_a_row_whose_candidates_all_share_its_label_has_loss_zero_or_raises_when_decoupled():
    z1, z2 = unit(3, D, seed=17).requires_grad_(True), unit(3, D, seed=18)
    same = torch.zeros(3, dtype=torch.long)
    loss = info_nce_in_batch(z1, z2, 0.1, labels=same, reduction="none")
    assert torch.equal(loss, torch.zeros(3, dtype=F64))
    (g,) = torch.autograd.grad(loss.sum(), z1)
    assert torch.equal(g, torch.zeros_like(g))
    with pytest.raises(ValueError, match="decoupled.*shares its label"):
        info_nce_in_batch(z1, z2, 0.1, labels=same, variant="decoupled")


@pytest.mark.parametrize("bad, err, match", [
    (torch.zeros(B), TypeError, "integer tensor"),
    (torch.zeros(B - 1, dtype=torch.long), ValueError, r"shape \(B,\) = \(8,\)"),
    ([0] * B, TypeError, "integer tensor"),
])
def test_bad_labels_are_named(bad, err, match):
    z = unit(B, D)
    with pytest.raises(err, match=match):
        info_nce_in_batch(z, z, 0.1, labels=bad)
    with pytest.raises(err, match=match):
        supcon(z, z, bad, 0.1)


def test_bad_extra_negatives_are_named():
    z = unit(B, D)
    with pytest.raises(ValueError, match=r"negatives \(extra hard negatives\) must have shape"):
        nt_xent(z, z, 0.1, negatives=unit(B, 2, D + 1))
    with pytest.raises(ValueError, match="negatives must have unit-norm rows"):
        nt_xent(z, z, 0.1, negatives=2 * unit(3, D))


def test_modules_take_labels_and_negatives():
    z1, z2 = unit(B, D, seed=19, dtype=torch.float32), unit(B, D, seed=20, dtype=torch.float32)
    neg = unit(3, D, seed=21, dtype=torch.float32)
    assert InBatchInfoNCELoss(0.1)(z1, z2, LABELS, neg) == info_nce_in_batch(z1, z2, 0.1, labels=LABELS,
                                                                               negatives=neg)
    assert NTXentLoss(0.1)(z1, z2, LABELS) == nt_xent(z1, z2, 0.1, labels=LABELS)
    criterion = SupConLoss(learn_temperature=True)
    loss = criterion(z1, z2, LABELS)
    loss.backward()
    assert criterion.logit_scale.grad is not None and math.isfinite(criterion.logit_scale.grad.item())
    assert "logit_scale" in dict(criterion.named_parameters())


# ---- the temperature as CLIP's logit_scale ------------------------------------------------------

Z1 = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
Z2 = torch.tensor([[-0.8, 0.6], [0.6, -0.8]])


def _true_loss_and_scale_grad(scale):
    """CLIP's symmetric loss of (Z1, Z2) and its derivative in the scale, in float64 (exact
    enough: the logits are differences of similarities times e^scale)."""
    s = torch.tensor(scale, dtype=F64, requires_grad=True)
    beta = torch.exp(s)
    y = beta * (Z1.double() @ Z2.double().T)
    rows = torch.logsumexp(y, 1) - y.diagonal()
    cols = torch.logsumexp(y, 0) - y.diagonal()
    loss = (rows.mean() + cols.mean()) / 2
    (g,) = torch.autograd.grad(loss, s)
    return loss.item(), g.item()


@pytest.mark.parametrize("scale", [math.log(1 / 0.07), 20.0, 46.0, 60.0, 80.0, 87.0])
@pytest.mark.parametrize("check_values", [True, False])
def test_learned_scale_gives_a_finite_gradient_wherever_it_is_representable(scale, check_values):
    criterion = InBatchInfoNCELoss(learn_temperature=True, check_values=check_values)
    with torch.no_grad():
        criterion.logit_scale.fill_(scale)
    want, want_grad = _true_loss_and_scale_grad(scale)
    assert abs(want_grad) < torch.finfo(torch.float32).max  # representable in float32
    loss = criterion(Z1, Z2)
    loss.backward()
    got = criterion.logit_scale.grad.item()
    assert math.isfinite(got)
    assert abs(loss.item() - want) <= 1e-5 * abs(want)
    assert abs(got - want_grad) <= 1e-5 * abs(want_grad)


def test_scale_beyond_the_range_raises_with_checks_and_tau_with_scale_is_an_error():
    with pytest.raises(OverflowError, match="logit_scale=95.0 is too large for torch.float32"):
        info_nce_in_batch(Z1, Z2, logit_scale=torch.tensor(95.0))
    with pytest.raises(ValueError, match="tau or logit_scale, not both"):
        info_nce_in_batch(Z1, Z2, 0.1, logit_scale=torch.tensor(1.0))
    with pytest.raises(TypeError, match="temperature is missing"):
        nt_xent(Z1, Z2)


def test_rows_normalised_in_bfloat16_and_cast_up_are_accepted():
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(22))
    layer = torch.nn.Linear(32, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = F.normalize(layer(x), dim=-1)
    z = z.float()
    assert (torch.linalg.vector_norm(z, dim=-1) - 1).abs().max() > 1e-4  # off float32's own precision
    info_nce_in_batch(z, z.flip(0), 0.1)  # accepted
    with pytest.raises(ValueError, match="Normalise first.*float16 or bfloat16 and cast up are accepted"):
        info_nce_in_batch(1.02 * z, z, 0.1)


def test_function_and_module_share_the_symmetric_default_both_directions():
    import inspect

    assert inspect.signature(info_nce_in_batch).parameters["symmetric"].default is True
    assert inspect.signature(InBatchInfoNCELoss).parameters["symmetric"].default is True
    z1, z2 = unit(B, D, seed=23), unit(B, D, seed=24)
    both = info_nce_in_batch(z1, z2, 0.1, symmetric=True)
    assert info_nce_in_batch(z1, z2, 0.1) == both == InBatchInfoNCELoss(0.1)(z1, z2)


@pytest.mark.parametrize("form", ["clip", "nt_xent"])
def test_bfloat16_scoring_is_within_its_measured_accuracy_of_float64(form):
    # Opt-in low-precision scoring: the products in bfloat16 (8 significant bits), the
    # log-sum-exp in float32. Declared before measuring: loss relative error <= 2^-8 * max|logit|
    # / loss-scale, here <= 5e-3 at tau = 0.1; gradients normwise <= 5e-2.
    z1, z2 = unit(128, 32, seed=25, dtype=torch.float32), unit(128, 32, seed=26, dtype=torch.float32)
    z2 = F.normalize(z1 + 0.5 * z2, dim=-1)
    fn = info_nce_in_batch if form == "clip" else nt_xent
    want_in = [z1.double().requires_grad_(True), z2.double().requires_grad_(True)]
    want = fn(*want_in, 0.1)
    want.backward()
    for chunk_size in (None, 16):
        got_in = [z1.clone().requires_grad_(True), z2.clone().requires_grad_(True)]
        got = fn(*got_in, 0.1, score_dtype=torch.bfloat16, chunk_size=chunk_size)
        got.backward()
        assert got.dtype == torch.float32
        assert abs(got.item() - want.item()) <= 5e-3 * want.item()
        for g, w in zip(got_in, want_in):
            assert (g.grad.double() - w.grad).norm() <= 5e-2 * w.grad.norm()
    with pytest.raises(ValueError, match="score_dtype must be None, torch.bfloat16 or torch.float16"):
        fn(z1, z2, 0.1, score_dtype=torch.float64)


def test_the_default_checks_read_nothing_on_the_host_under_torch_compile():
    # check_values=None (the default): checks in eager mode, none while dynamo traces (0 graph
    # breaks); check_values=True keeps them (graph breaks at the host reads).
    import torch._dynamo as dynamo

    z1 = unit(64, 16, seed=27, dtype=torch.float32).requires_grad_(True)
    z2 = unit(64, 16, seed=28, dtype=torch.float32).requires_grad_(True)
    criterion = InBatchInfoNCELoss(learn_temperature=True)
    try:
        for fn, breaks in ((lambda a, b: criterion(a, b), 0),
                           (lambda a, b: info_nce_in_batch(a, b, 0.07, check_values=True), None)):
            explained = dynamo.explain(fn)(z1, z2)
            if breaks is None:
                assert explained.graph_break_count >= 1
            else:
                assert explained.graph_break_count == breaks, explained.break_reasons
            dynamo.reset()
    finally:
        dynamo.reset()
    with pytest.raises(ValueError, match="unit-norm"):  # eager: the default still checks
        info_nce_in_batch(2 * z1, z2, 0.07)


@pytest.mark.parametrize("symmetric", [False, True])
def test_without_checks_a_representable_loss_is_finite_and_an_overflowing_one_is_inf(symmetric):
    # At logit_scale 88 the true loss (float64) is 2.31e38 < float32's largest number: the mean
    # of rows must not overflow on the way; at 88.7 the true value exceeds it: inf, not NaN.
    for scale, finite in ((88.0, True), (88.7, False)):
        t = torch.tensor(scale, requires_grad=True)
        loss = info_nce_in_batch(Z1, Z2, logit_scale=t, check_values=False, symmetric=symmetric)
        loss.backward()
        want, want_grad = _true_loss_and_scale_grad(scale)
        if finite:
            assert abs(loss.item() - want) <= 1e-5 * want and abs(t.grad.item() - want_grad) <= 1e-5 * want_grad
        else:
            assert want > torch.finfo(torch.float32).max and loss.item() == math.inf
