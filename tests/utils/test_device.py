"""Device selection, and the GPU path where a GPU is present."""

import pytest
import torch

from infonce_book.losses import info_nce
from infonce_book.utils.device import one_thread, resolve_device

has_cuda = torch.cuda.is_available()


def test_auto_picks_cuda_only_when_present():
    assert resolve_device("auto").type == ("cuda" if has_cuda else "cpu")
    assert resolve_device("cpu").type == "cpu"


def test_unknown_device_is_refused():
    with pytest.raises(ValueError, match="device must be one of"):
        resolve_device("tpu")
    with pytest.raises(TypeError, match="device"):
        resolve_device(3)


@pytest.mark.skipif(has_cuda, reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_a_clear_error():
    with pytest.raises(ValueError, match="no CUDA GPU is available"):
        resolve_device("cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not has_cuda, reason="no CUDA GPU on this machine")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_loss_matches_the_cpu_float64_reference(dtype):
    g = torch.Generator().manual_seed(0)
    a, p, n = (torch.nn.functional.normalize(torch.randn(*s, generator=g, dtype=torch.float64), dim=-1)
               for s in ((64, 16), (64, 16), (64, 1000, 16)))
    a, p, n = (t.to(dtype) for t in (a, p, n))
    # Reference: the same rounded inputs, in float64 on the CPU.
    ref = info_nce(a.double(), p.double(), n.double(), 0.07, reduction="none", require_unit_norm=False)
    got = info_nce(a.cuda(), p.cuda(), n.cuda(), 0.07, reduction="none", chunk_size=128)
    torch.testing.assert_close(got.double().cpu(), ref, rtol=1e-5, atol=1e-5 / 0.07)


@pytest.mark.gpu
@pytest.mark.skipif(not has_cuda, reason="no CUDA GPU on this machine")
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_streaming_gradients_match_the_cpu_float64_reference(shared, dtype):
    g = torch.Generator().manual_seed(1)
    unit = lambda *s: torch.nn.functional.normalize(torch.randn(*s, generator=g, dtype=torch.float64), dim=-1)  # noqa: E731
    a, p = unit(32, 16), unit(32, 16)
    n = unit(3000, 16) if shared else unit(32, 300, 16)
    a, p, n = (t.to(dtype) for t in (a, p, n))
    # Reference: the same rounded inputs, float64 on the CPU.
    ref = [t.double().requires_grad_() for t in (a, p, n)]
    info_nce(*ref, 0.2, require_unit_norm=False).backward()
    got = [t.cuda().requires_grad_() for t in (a, p, n)]
    loss = info_nce(*got, 0.2, chunk_size=1000 if shared else 128)
    loss.backward()
    # float32 computation: about eps32 (1 + beta); the gradients are then rounded to the dtype.
    tol = 4 * 2.0**-23 * (1 + 1 / 0.2) + (2 * torch.finfo(dtype).eps if dtype != torch.float32 else 0.0)
    want = float(info_nce(*(r.detach() for r in ref), 0.2, require_unit_norm=False))
    assert abs(loss.item() - want) <= tol * want
    for t, r in zip(got, ref):
        assert t.grad.device.type == "cuda" and t.grad.dtype == dtype
        err = (t.grad.double().cpu() - r.grad).abs().max() / r.grad.abs().max()
        assert err <= tol


def test_one_thread_sets_one_thread_and_restores_the_setting():
    before = torch.get_num_threads()
    with one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    try:
        with one_thread():
            raise RuntimeError("inside")
    except RuntimeError:
        pass
    assert torch.get_num_threads() == before  # restored on errors too
