"""``check_values=False``: a loss call, forward and backward, reads no value back to the host.

On the CPU every way a tensor's value reaches Python is counted (``item``, ``tolist``, ``bool``,
``float``, ``int``, ``__index__``, ``numpy``, ``cpu``): zero with the option off, and more than
zero with it on (so the counter sees the reads it is meant to see). On a GPU (marker ``gpu``,
skipped without CUDA) ``torch.cuda.set_sync_debug_mode("error")`` turns any synchronisation,
a read by indexing included, into an error. Every path is covered: the fused and the chunked
kernels, from embeddings and from similarities, with explicit, in-batch and NT-Xent negatives (the
local in-batch forms through the pairwise kernel, materialised and by row tiles via a small chunk
size), a float and a learnable tensor temperature, the modules, the zero loss of a row without
negatives, and float32 and bfloat16 inputs under autocast.
"""

import contextlib

import pytest
import torch
from torch.nn import functional as F

from infonce_book.losses import (
    InBatchInfoNCELoss,
    NTXentLoss,
    _pairwise,
    info_nce,
    info_nce_from_similarities,
    info_nce_in_batch,
    info_nce_streaming,
    nt_xent,
)

READS = ("item", "tolist", "__bool__", "__float__", "__int__", "__index__", "__complex__", "numpy", "cpu")


@contextlib.contextmanager
def counting_host_reads(monkeypatch):
    """A list that gets one entry per call of a method that hands a tensor's value to Python."""
    calls = []
    for name in READS:
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            calls.append(_name)
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(torch.Tensor, name, counted)
    try:
        yield calls
    finally:
        monkeypatch.undo()


def _unit(*shape, device, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return F.normalize(torch.randn(*shape, generator=g), dim=-1).to(device=device, dtype=dtype)


def _cases(device, check_values=False):
    """``(name, inputs, loss)``: the inputs are leaves that need gradients."""
    z1, z2 = _unit(40, 16, device=device, seed=1), _unit(40, 16, device=device, seed=2)
    n, per = _unit(300, 16, device=device, seed=3), _unit(40, 7, 16, device=device, seed=4)
    big1, big2 = _unit(300, 8, device=device, seed=5), _unit(300, 8, device=device, seed=6)  # B^2 > 2^16
    s_pos, s_neg = (z1 * z2).sum(-1), z1 @ n.T
    tau = torch.tensor(0.1, device=device)
    clip, simclr = InBatchInfoNCELoss(learn_temperature=True, check_values=check_values).to(device), \
        NTXentLoss(learn_temperature=True, check_values=check_values).to(device)
    off = dict(check_values=check_values)
    return [
        ("explicit fused", (z1, z2, n, tau), lambda a, p, m, t: info_nce(a, p, m, t, **off)),
        ("explicit chunked", (z1, z2, n, tau), lambda a, p, m, t: info_nce(a, p, m, t, chunk_size=64, **off)),
        ("explicit per anchor", (z1, z2, per), lambda a, p, m: info_nce(a, p, m, 0.2, chunk_size=3, **off)),
        ("explicit k = 0", (z1, z2, tau), lambda a, p, t: info_nce(a, p, n[:0], t, **off)),
        ("similarities fused", (s_pos, s_neg, tau), lambda s, m, t: info_nce_from_similarities(s, m, t, **off)),
        ("similarities chunked", (s_pos, s_neg), lambda s, m: info_nce_from_similarities(
            s, m, 0.1, chunk_size=50, **off)),
        ("streaming", (s_pos, s_neg, tau), lambda s, m, t: info_nce_streaming(s, m.split(100, 1), t, **off)),
        ("in-batch pairwise", (z1, z2, tau), lambda a, b, t: info_nce_in_batch(a, b, t, symmetric=True, **off)),
        ("in-batch pairwise B^2 > 2^16", (big1, big2, tau), lambda a, b, t: info_nce_in_batch(
            a, b, t, symmetric=True, **off)),
        ("in-batch tiled", (z1, z2, tau), lambda a, b, t: info_nce_in_batch(
            a, b, t, symmetric=True, chunk_size=7, **off)),
        ("in-batch tiled rows", (z1, z2), lambda a, b: info_nce_in_batch(
            a, b, 0.2, variant="decoupled", reduction="none", chunk_size=16, **off, symmetric=False)),
        ("in-batch B = 1", (z1[:1], z2[:1], tau), lambda a, b, t: info_nce_in_batch(a, b, t, **off, symmetric=False)),
        ("nt_xent pairwise", (z1, z2), lambda a, b: nt_xent(a, b, 0.5, reduction="sum", **off)),
        ("nt_xent tiled", (z1, z2, tau), lambda a, b, t: nt_xent(a, b, t, chunk_size=16, **off)),
        ("nt_xent B = 1", (z1[:1], z2[:1], tau), lambda a, b, t: nt_xent(a, b, t, **off)),
        ("CLIP module", (z1, z2), clip),
        ("SimCLR module", (big1, big2), simclr),
        ("bfloat16 under autocast", (z1.bfloat16(), z2.bfloat16()),
         lambda a, b: _autocast(device, lambda: clip(a, b))),
    ]


def _autocast(device, fn):
    with torch.autocast(device, dtype=torch.bfloat16):
        return fn()


def _run(inputs, loss):
    xs = [x.detach().clone().requires_grad_() for x in inputs]
    out = loss(*xs)
    out.sum().backward()
    return out, xs


CPU_CASES = _cases("cpu")


@pytest.mark.parametrize("name, inputs, loss", CPU_CASES, ids=[c[0] for c in CPU_CASES])
def test_no_value_is_read_on_the_host_without_value_checks(monkeypatch, name, inputs, loss):
    with counting_host_reads(monkeypatch) as calls:
        out, xs = _run(inputs, loss)
    assert calls == []
    assert all(x.grad is not None for x in xs)
    assert bool(torch.isfinite(out).all())  # read after the count: the loss is a number


TILED = [c for c in CPU_CASES if "tiled" in c[0] or "module" in c[0]]


@pytest.mark.parametrize("name, inputs, loss", TILED, ids=[c[0] for c in TILED])
def test_the_local_in_batch_cases_run_the_pairwise_kernel(monkeypatch, name, inputs, loss):
    """The cases above named "tiled" go through the tiles of the pairwise kernel (forward and
    backward), the modules through the kernel (so the counts above cover the new kernel)."""
    seen = []
    for fn in ("tiled_forward", "tiled_backward", "materialised_forward"):
        original = getattr(_pairwise, fn)
        monkeypatch.setattr(_pairwise, fn, lambda *a, _f=original, _n=fn, **k: seen.append(_n) or _f(*a, **k))
    _run(inputs, loss)
    want = {"tiled_forward", "tiled_backward"} if "tiled" in name else {"materialised_forward"}
    assert set(seen) == want


def test_the_counter_sees_the_reads_of_the_value_checks(monkeypatch):
    z1, z2 = _unit(40, 16, device="cpu", seed=1), _unit(40, 16, device="cpu", seed=2)
    # norm and finiteness checks; then the value of tau
    for fn in (lambda a, b: info_nce_in_batch(a, b, 0.1, symmetric=False),
               lambda a, b: info_nce_in_batch(a, b, torch.tensor(0.1), symmetric=False),
               lambda a, b: InBatchInfoNCELoss(learn_temperature=True)(a, b)):
        with counting_host_reads(monkeypatch) as calls:
            _run((z1, z2), fn)
        assert len(calls) >= 1


def test_the_values_without_checks_equal_those_with_them():
    for (name, inputs, loss), (_, _, checked) in zip(CPU_CASES, _cases("cpu", check_values=True)):
        got, got_x = _run(inputs, loss)
        want, want_x = _run(inputs, checked)
        torch.testing.assert_close(got, want, rtol=2e-6, atol=1e-6, msg=name)
        for g, w in zip(got_x, want_x):  # (bfloat16 gradients: within one rounding of bfloat16)
            tol = 2 * torch.finfo(g.dtype).eps if g.dtype == torch.bfloat16 else 1e-5
            torch.testing.assert_close(g.grad, w.grad, rtol=tol, atol=tol * 1e-1, msg=name)


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")


@pytest.mark.gpu
@needs_cuda
def test_no_synchronisation_on_the_gpu_without_value_checks():
    cases = _cases("cuda")
    torch.cuda.synchronize()
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        outs = [_run(inputs, loss)[0] for _, inputs, loss in cases]
    finally:
        torch.cuda.set_sync_debug_mode(previous)
    for (name, _, _), out in zip(cases, outs):
        assert bool(torch.isfinite(out).all()), name


@pytest.mark.gpu
@needs_cuda
def test_the_gpu_synchronises_with_value_checks():
    """The positive control: the default checks do read (and so synchronise)."""
    z1, z2 = _unit(40, 16, device="cuda", seed=1), _unit(40, 16, device="cuda", seed=2)
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        with pytest.raises(RuntimeError, match="synchroniz"):
            info_nce_in_batch(z1, z2, 0.1, symmetric=False)
    finally:
        torch.cuda.set_sync_debug_mode(previous)
