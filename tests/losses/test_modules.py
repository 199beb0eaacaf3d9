"""The loss modules (:mod:`infonce_book.losses.modules`): equal to their functions, a learnable
temperature held as CLIP's ``logit_scale`` with the right gradient (against a float64 reference
written with ``torch.logsumexp``, and central finite differences), ``state_dict`` round trips,
option errors at construction, and a small model trained with each for a few steps."""

import copy
import io
import math

import pytest
import torch
from torch.nn import functional as F

from infonce_book.losses import (
    InBatchInfoNCELoss,
    InfoNCELoss,
    NTXentLoss,
    info_nce,
    info_nce_in_batch,
    nt_xent,
)

F64 = torch.float64


def unit(*shape, seed, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(*shape, generator=g, dtype=F64), dim=-1).to(dtype)


def clip_reference(z1, z2, logit_scale):
    """CLIP's symmetric loss as its paper writes it (Figure 3): cross-entropy over both directions
    of ``z1 z2^T * exp(logit_scale)``."""
    logits = z1 @ z2.T * logit_scale.exp()
    labels = torch.arange(z1.shape[0])
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2


def nt_xent_reference(z1, z2, logit_scale):
    views = torch.cat([z1, z2])
    logits = (views @ views.T * logit_scale.exp()).fill_diagonal_(float("-inf"))
    B = z1.shape[0]
    labels = torch.cat([torch.arange(B, 2 * B), torch.arange(B)])
    return F.cross_entropy(logits, labels)


def explicit_reference(a, p, n, logit_scale):
    beta = logit_scale.exp()
    s_pos, s_neg = (a * p).sum(-1) * beta, (a @ n.T) * beta
    return (torch.logsumexp(torch.cat([s_pos[:, None], s_neg], 1), 1) - s_pos).mean()


CASES = {
    "in_batch": (lambda **kw: InBatchInfoNCELoss(**kw), lambda z1, z2, n: (z1, z2), clip_reference),
    "nt_xent": (lambda **kw: NTXentLoss(**kw), lambda z1, z2, n: (z1, z2), nt_xent_reference),
    "explicit": (lambda **kw: InfoNCELoss(**kw), lambda z1, z2, n: (z1, z2, n),
                 lambda a, p, n, s: explicit_reference(a, p, n, s)),
}


@pytest.mark.parametrize("chunk_size", [None, 2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("variant", ["standard", "decoupled"])
def test_the_modules_equal_their_functions(variant, reduction, chunk_size):
    z1, z2, n = unit(5, 4, seed=0), unit(5, 4, seed=1), unit(7, 4, seed=2)
    opts = dict(variant=variant, reduction=reduction, chunk_size=chunk_size)
    pairs = [
        (InfoNCELoss(0.3, **opts)(z1, z2, n), info_nce(z1, z2, n, 0.3, **opts)),
        (InBatchInfoNCELoss(0.3, **opts)(z1, z2), info_nce_in_batch(z1, z2, 0.3, symmetric=True, **opts)),
        (InBatchInfoNCELoss(0.3, symmetric=False, **opts)(z1, z2),
         info_nce_in_batch(z1, z2, 0.3, **opts, symmetric=False)),
        (NTXentLoss(0.3, **opts)(z1, z2), nt_xent(z1, z2, 0.3, **opts)),
    ]
    for got, want in pairs:
        assert torch.equal(got, want)


def test_a_learned_temperature_is_clip_logit_scale_initialised_at_one_over_0_07():
    criterion = InBatchInfoNCELoss(learn_temperature=True)
    assert isinstance(criterion.logit_scale, torch.nn.Parameter)
    assert criterion.logit_scale.item() == pytest.approx(math.log(1 / 0.07), rel=1e-7)
    assert [name for name, _ in criterion.named_parameters()] == ["logit_scale"]
    torch.testing.assert_close(criterion.temperature, torch.tensor(0.07), rtol=1e-6, atol=0)
    assert list(InBatchInfoNCELoss().parameters()) == []  # fixed: no parameter


@pytest.mark.parametrize("check_values", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("tau", [0.05, 0.5])
def test_the_temperature_gradient_equals_the_float64_reference(case, tau, check_values):
    make, args, reference = CASES[case]
    z1, z2, n = unit(6, 5, seed=3), unit(6, 5, seed=4), unit(9, 5, seed=5)
    criterion = make(tau=tau, learn_temperature=True, check_values=check_values).double()
    inputs = [x.clone().requires_grad_() for x in args(z1, z2, n)]
    criterion(*inputs).backward()
    scale = criterion.logit_scale.detach().clone().requires_grad_()  # log(1/tau), rounded to float32
    ref_inputs = [x.clone().requires_grad_() for x in args(z1, z2, n)]
    reference(*ref_inputs, scale).backward()
    torch.testing.assert_close(criterion.logit_scale.grad, scale.grad, rtol=1e-12, atol=1e-14)
    for x, r in zip(inputs, ref_inputs):
        torch.testing.assert_close(x.grad, r.grad, rtol=1e-11, atol=1e-13)
    # and against central finite differences of the module itself
    h, s0 = 1e-6, scale.item()
    with torch.no_grad():
        def at(value):
            criterion.logit_scale.fill_(value)
            return criterion(*args(z1, z2, n)).item()
        fd = (at(s0 + h) - at(s0 - h)) / (2 * h)
    assert criterion.logit_scale.grad.item() == pytest.approx(fd, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("case", sorted(CASES))
def test_state_dict_round_trips(case):
    make, args, _ = CASES[case]
    criterion = make(tau=0.2, learn_temperature=True)
    with torch.no_grad():
        criterion.logit_scale.add_(0.37)
    buffer = io.BytesIO()
    torch.save(criterion.state_dict(), buffer)
    buffer.seek(0)
    restored = make(tau=0.9, learn_temperature=True)
    restored.load_state_dict(torch.load(buffer))
    assert torch.equal(restored.logit_scale, criterion.logit_scale)
    z1, z2, n = unit(4, 3, seed=6, dtype=torch.float32), unit(4, 3, seed=7, dtype=torch.float32), \
        unit(5, 3, seed=8, dtype=torch.float32)
    assert torch.equal(restored(*args(z1, z2, n)), criterion(*args(z1, z2, n)))
    assert copy.deepcopy(criterion).logit_scale.item() == criterion.logit_scale.item()
    assert make(tau=0.2).state_dict() == {}  # a fixed temperature is an option, not a state


def test_bad_options_are_clear_errors_at_construction():
    with pytest.raises(ValueError, match=r"tau must be in \(0, inf\)"):
        InBatchInfoNCELoss(0.0)
    with pytest.raises(ValueError, match="variant"):
        NTXentLoss(variant="symmetric")
    with pytest.raises(ValueError, match="reduction"):
        InfoNCELoss(reduction="max")
    with pytest.raises(ValueError, match="chunk_size"):
        InfoNCELoss(chunk_size=0)
    with pytest.raises(ValueError, match="accumulate"):
        InBatchInfoNCELoss(accumulate=torch.float16)
    for flag in ("learn_temperature", "check_values", "require_unit_norm"):
        with pytest.raises(TypeError, match=f"{flag} must be True or False"):
            NTXentLoss(**{flag: 1})
    with pytest.raises(TypeError, match="symmetric must be True or False"):
        InBatchInfoNCELoss(symmetric="yes")
    assert "tau=learned (logit_scale)" in repr(InBatchInfoNCELoss(learn_temperature=True))
    assert "symmetric=True" in repr(InBatchInfoNCELoss())


class TwoTower(torch.nn.Module):
    """A small encoder pair with a loss module inside, as a model holds one."""

    def __init__(self, criterion):
        super().__init__()
        self.f = torch.nn.Linear(8, 4)
        self.g = torch.nn.Linear(8, 4)
        self.criterion = criterion

    def forward(self, x, y):
        return self.criterion(F.normalize(self.f(x), dim=-1), F.normalize(self.g(y), dim=-1))


@pytest.mark.parametrize("make", [lambda: InBatchInfoNCELoss(learn_temperature=True),
                                  lambda: NTXentLoss(0.5, learn_temperature=True)])
def test_a_model_with_the_loss_inside_trains(make):
    torch.manual_seed(0)
    model = TwoTower(make())
    initial = model.criterion.logit_scale.item()
    x = torch.randn(32, 8)
    y = x @ torch.randn(8, 8) * 0.5 + 0.1 * torch.randn(32, 8)  # paired views
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)  # logit_scale among them
    losses = []
    for _ in range(30):
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            model.criterion.logit_scale.clamp_(0, math.log(100))
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert model.criterion.logit_scale.item() != pytest.approx(initial, abs=1e-3)  # it was learned
