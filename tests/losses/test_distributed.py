"""Negatives gathered across processes: two gloo processes against one process holding the whole
batch, in float64, to 1e-6 (observed: rounding, about 1e-15).

What "right" means (module docstring of infonce_book.losses.distributed): each process's loss is
the mean over its own anchors; the mean of the processes' losses is the whole batch's loss; the
gather's backward pass gives every process ``sum_p dL_p/dz_r``, which is ``W`` times the whole
batch's gradient for its rows; a learnable tau's and a DistributedDataParallel model's gradients,
averaged over the processes, are the whole batch's."""

import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).parent))  # the spawned processes import the worker module by name
import _distributed_worker as W

WORLD = 2
TOL = 1e-6

pytestmark = [pytest.mark.slow,  # two processes started per module: `make test`, not `make test-fast`
              pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                 reason="torch.distributed with gloo is not available")]


@pytest.fixture(scope="module")
def distributed_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dist")
    mp.spawn(W.worker, args=(WORLD, str(tmp / "init"), str(tmp)), nprocs=WORLD, join=True)
    return [torch.load(tmp / f"rank{r}.pt") for r in range(WORLD)]


def single_process(name):
    """Loss and gradients of one process holding the whole batch (no torch.distributed)."""
    z1, z2, n, _, _ = W.global_batch(WORLD)
    z1, z2, n = (t.clone().requires_grad_() for t in (z1, z2, n))
    tau = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    loss = W.losses(gather=False)[name](z1, z2, n, tau)
    loss.backward()
    return {"loss": loss.detach(), "z1": z1.grad, "z2": z2.grad, "n": n.grad, "tau": tau.grad}


def single_process_ddp(name):
    _, _, _, x1, x2 = W.global_batch(WORLD)
    model = W.encoder()
    z1 = torch.nn.functional.normalize(model(x1), dim=-1)
    z2 = torch.nn.functional.normalize(model(x2), dim=-1)
    W.losses(gather=False)[name](z1, z2, None, 0.3).backward()
    return {"weight": model.weight.grad, "bias": model.bias.grad}


def close(got, want):
    return float((got - want).abs().max()) <= TOL * max(1.0, float(want.abs().max()))


@pytest.mark.parametrize("name", list(W.losses(gather=False)))
def test_gathered_loss_and_gradients_equal_one_process_with_the_whole_batch(distributed_results, name):
    want = single_process(name)
    got = [r[name] for r in distributed_results]
    # A sum over the local anchors adds up over the processes; a mean averages.
    combine = sum if name.endswith("-sum") else (lambda xs: sum(xs) / WORLD)
    assert close(combine([g["loss"] for g in got]), want["loss"])
    assert close(combine([g["tau"] for g in got]), want["tau"])  # tau's gradient as DDP averages it
    scale = 1 if name.endswith("-sum") else WORLD  # sum over processes of the local means = W x the global mean
    for r, g in enumerate(got):
        rows, negs = slice(r * W.B, (r + 1) * W.B), slice(r * W.K, (r + 1) * W.K)
        assert close(g["z1"], scale * want["z1"][rows]), (r, "z1")
        assert close(g["z2"], scale * want["z2"][rows]), (r, "z2")
        if name.startswith("info_nce"):
            assert close(g["n"], scale * want["n"][negs]), (r, "n")


@pytest.mark.parametrize("name", ["nt_xent", "clip-symmetric"])
def test_ddp_training_step_follows_the_whole_batch_gradient(distributed_results, name):
    want = single_process_ddp(name)
    for r in range(WORLD):
        got = distributed_results[r][f"ddp-{name}"]
        assert close(got["weight"], want["weight"]) and close(got["bias"], want["bias"]), r


def test_gathering_without_gradient_gives_wrong_gradients(distributed_results):
    # The trap the gather avoids (and the proof that the comparison above can fail): with the
    # other processes' embeddings gathered without gradient, DDP's averaged gradient of the same
    # loss (CLIP's rows) differs from the whole batch's.
    _, _, _, x1, x2 = W.global_batch(WORLD)
    model = W.encoder()
    z1 = torch.nn.functional.normalize(model(x1), dim=-1)
    z2 = torch.nn.functional.normalize(model(x2), dim=-1)
    torch.nn.functional.cross_entropy(z1 @ z2.T / 0.3, torch.arange(WORLD * W.B)).backward()
    got = distributed_results[0]["ddp-no-grad-gather"]["weight"]
    assert float((got - model.weight.grad).abs().max()) > 1e-3 * float(model.weight.grad.abs().max())


def test_shapes_that_differ_between_processes_are_an_error_on_every_process(distributed_results):
    for r in range(WORLD):
        message = distributed_results[r]["mismatch"]
        assert "same shape" in message and "process 0: shape (2, 4)" in message and "process 1: shape (3, 4)" in message
