"""One process of tests/losses/test_distributed.py (started by torch.multiprocessing.spawn; a
module of its own so that the spawned interpreter can import it).

Every process builds the same global batch (same seed), keeps its own slice, computes the losses
with the other processes' embeddings gathered, runs the backward pass and saves its loss and
gradients to ``out_dir/rank<r>.pt`` for the test to compare with one process holding the whole
batch."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

from infonce_book.losses import gather_with_grad, info_nce, info_nce_in_batch, nt_xent, supcon

F64 = torch.float64
B, D, D_IN, K = 3, 4, 5, 4  # pairs and explicit negatives per process, embedding and input dims


def global_batch(world):
    g = torch.Generator().manual_seed(0)
    z1 = F.normalize(torch.randn(world * B, D, generator=g, dtype=F64), dim=-1)
    z2 = F.normalize(torch.randn(world * B, D, generator=g, dtype=F64), dim=-1)
    n = F.normalize(torch.randn(world * K, D, generator=g, dtype=F64), dim=-1)
    x1 = torch.randn(world * B, D_IN, generator=g, dtype=F64)
    x2 = torch.randn(world * B, D_IN, generator=g, dtype=F64)
    return z1, z2, n, x1, x2


def labels_of(z1, gather):
    """The labels of the local pairs: two classes alternating over the global batch's pairs."""
    offset = dist.get_rank() * B if gather else 0
    return (offset + torch.arange(z1.shape[0])) % 2


def losses(gather):
    """name -> loss(z1, z2, n, tau); with ``gather`` the candidates (or negatives) of every process."""
    negatives = gather_with_grad if gather else (lambda x: x)
    return {
        "clip-labels": lambda z1, z2, n, t: info_nce_in_batch(z1, z2, t, labels=labels_of(z1, gather), gather=gather),
        "nt_xent-labels-chunked": lambda z1, z2, n, t: nt_xent(z1, z2, t, labels=labels_of(z1, gather), chunk_size=2,
                                                               gather=gather),
        "supcon": lambda z1, z2, n, t: supcon(z1, z2, labels_of(z1, gather), t, gather=gather),
        "nt_xent": lambda z1, z2, n, t: nt_xent(z1, z2, t, gather=gather),
        "nt_xent-decoupled-chunked": lambda z1, z2, n, t: nt_xent(z1, z2, t, variant="decoupled", chunk_size=4,
                                                                  gather=gather),
        "clip-symmetric": lambda z1, z2, n, t: info_nce_in_batch(z1, z2, t, symmetric=True, gather=gather),
        "clip-chunked-sum": lambda z1, z2, n, t: info_nce_in_batch(z1, z2, t, chunk_size=2, gather=gather,
                                                                   reduction="sum", symmetric=False),
        "info_nce-gathered-negatives": lambda z1, z2, n, t: info_nce(z1, z2, negatives(n), t),
    }


def encoder():
    torch.manual_seed(1)
    return torch.nn.Linear(D_IN, D, dtype=F64)


def worker(rank, world, init_file, out_dir):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        z1_all, z2_all, n_all, x1_all, x2_all = global_batch(world)
        rows, negs = slice(rank * B, (rank + 1) * B), slice(rank * K, (rank + 1) * K)
        results = {}
        for name, fn in losses(gather=True).items():
            z1, z2, n = (t[s].clone().requires_grad_() for t, s in ((z1_all, rows), (z2_all, rows), (n_all, negs)))
            tau = torch.tensor(0.3, dtype=F64, requires_grad=True)
            loss = fn(z1, z2, n, tau)
            loss.backward()
            results[name] = {"loss": loss.detach(), "z1": z1.grad, "z2": z2.grad, "n": n.grad, "tau": tau.grad}

        # Training as a user would: an encoder in DistributedDataParallel, which averages the
        # parameters' gradients over the processes.
        for name in ("nt_xent", "clip-symmetric"):
            model = torch.nn.parallel.DistributedDataParallel(encoder())
            z1 = F.normalize(model(x1_all[rows]), dim=-1)
            z2 = F.normalize(model(x2_all[rows]), dim=-1)
            losses(gather=True)[name](z1, z2, None, 0.3).backward()
            results[f"ddp-{name}"] = {"weight": model.module.weight.grad, "bias": model.module.bias.grad}

        # The trap: gathering without gradient (the local slice put back), then DDP's average.
        model = torch.nn.parallel.DistributedDataParallel(encoder())
        z1 = F.normalize(model(x1_all[rows]), dim=-1)
        z2 = F.normalize(model(x2_all[rows]), dim=-1)
        parts = [torch.empty_like(z2) for _ in range(world)]
        dist.all_gather(parts, z2.detach())
        parts[rank] = z2
        candidates = torch.cat(parts)
        logits = z1 @ candidates.T / 0.3
        F.cross_entropy(logits, torch.arange(rank * B, (rank + 1) * B)).backward()
        results["ddp-no-grad-gather"] = {"weight": model.module.weight.grad, "bias": model.module.bias.grad}

        # Shapes that differ between processes: a clear error on every process.
        try:
            gather_with_grad(torch.zeros(2 + rank, D, dtype=F64))
            results["mismatch"] = "no error"
        except ValueError as exc:
            results["mismatch"] = str(exc)
        torch.save(results, f"{out_dir}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()
