"""Measure the accuracy of the InfoNCE loss and its gradients for float32 inputs against a float64
reference, for both accumulation dtypes; write a Markdown table (included by the book's page
"Input validation and failure modes").

    INFONCE_BOOK_NO_PROGRESS=1 .venv/bin/python scripts/measure_numerics.py            # CPU
    INFONCE_BOOK_NO_PROGRESS=1 .venv/bin/python scripts/measure_numerics.py --device cuda

Inputs: float32 embeddings uniform on S^{d-1} (d = 4, so that cosines span [-1, 1]), B = 8
anchors for k = 10^3 and B = 2 for k = 10^6, negatives shared by the batch, scored in chunks of
2^16; the similarity path gets the float32 similarities of the same embeddings. Reference: the
same float32 inputs converted to float64, the whole (B, k) logit matrix materialised, and
``torch.logsumexp`` with float64 autograd (an independent implementation). Reported: the largest
relative error of the per-anchor losses and the largest normwise relative error
``max |g - g_ref| / max |g_ref|`` over the gradients of every input, over ``--seeds`` draws.
Writes ``benchmarks/results/<device>/accuracy.md`` (``--out`` to change it).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import platform
import subprocess
from pathlib import Path

import torch

from infonce_book.losses import info_nce, info_nce_from_similarities

TAUS = (1e-4, 1e-2, 1.0, 1e2)
KS = (10**3, 10**6)


def _unit(shape, gen, device):
    x = torch.randn(*shape, generator=gen, dtype=torch.float64)
    return (x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)).float().to(device)


def _reference(a, p, n, tau):
    """Materialised float64 loss per anchor and its gradients (a, p, n): the ground truth."""
    a, p, n = (t.detach().cpu().double().requires_grad_() for t in (a, p, n))
    s_pos = (a * p).sum(-1)
    z = torch.cat([torch.zeros_like(s_pos)[:, None], (a @ n.T - s_pos[:, None]) / tau], dim=1)
    loss = torch.logsumexp(z, dim=1)
    loss.sum().backward()
    return loss.detach(), (a.grad, p.grad, n.grad)


def _errors(loss, grads, ref_loss, ref_grads):
    rel = float(((loss.detach().cpu().double() - ref_loss).abs() / ref_loss.abs()).max())
    nw = max(float((g.cpu().double() - r).abs().max() / r.abs().max()) for g, r in zip(grads, ref_grads))
    return rel, nw


def measure(device: str, seeds: int, d: int = 4, chunk: int = 2**16):
    rows = []
    for k in KS:
        B = 8 if k <= 10**3 else 2
        for tau in TAUS:
            worst = {}
            for seed in range(seeds):
                gen = torch.Generator().manual_seed(seed)
                a, p, n = _unit((B, d), gen, device), _unit((B, d), gen, device), _unit((k, d), gen, device)
                ref_loss, ref_grads = _reference(a, p, n, tau)
                for acc in (torch.float32, torch.float64):
                    # embeddings path
                    ins = [t.clone().requires_grad_() for t in (a, p, n)]
                    loss = info_nce(*ins, tau, reduction="none", chunk_size=chunk, accumulate=acc)
                    loss.sum().backward()
                    e = _errors(loss, [t.grad for t in ins], ref_loss, ref_grads)
                    key = ("info_nce", str(acc).replace("torch.", ""))
                    worst[key] = tuple(max(x, y) for x, y in zip(worst.get(key, (0.0, 0.0)), e))
                    # similarities path: float32 similarities of the same embeddings
                    with torch.no_grad():
                        s_pos = (a * p).sum(-1)
                        s_neg = a @ n.T
                    sp, sn = s_pos.clone().requires_grad_(), s_neg.clone().requires_grad_()
                    ls = info_nce_from_similarities(sp, sn, tau, reduction="none", chunk_size=chunk, accumulate=acc)
                    ls.sum().backward()
                    sp64, sn64 = s_pos.double().cpu().requires_grad_(), s_neg.double().cpu().requires_grad_()
                    z = torch.cat([torch.zeros_like(sp64)[:, None], (sn64 - sp64[:, None]) / tau], dim=1)
                    ref = torch.logsumexp(z, dim=1)
                    ref.sum().backward()
                    e = _errors(ls, (sp.grad, sn.grad), ref.detach(), (sp64.grad, sn64.grad))
                    key = ("info_nce_from_similarities", str(acc).replace("torch.", ""))
                    worst[key] = tuple(max(x, y) for x, y in zip(worst.get(key, (0.0, 0.0)), e))
            for (path, acc), (rel, nw) in sorted(worst.items()):
                rows.append({"path": path, "accumulate": acc, "k": k, "B": B, "tau": tau, "loss_rel": rel,
                             "grad_normwise": nw})
    return rows


def markdown(rows, device: str, seeds: int) -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    head = (f"Measured by `scripts/measure_numerics.py` on {_dt.date.today().isoformat()}, device `{device}` "
            f"({platform.processor() or platform.machine()}), torch {torch.__version__}, commit {commit}; "
            f"largest error over {seeds} seeds of float32 inputs (d = 4, negatives shared, chunks of 2^16) "
            f"against a materialised float64 reference.\n\n")
    lines = ["| path | accumulate | k | tau | loss: max relative error | gradients: max normwise relative error |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['path']}` | `{r['accumulate']}` | {r['k']:.0e} | {r['tau']:g} | {r['loss_rel']:.1e} | "
                     f"{r['grad_normwise']:.1e} |")
    return head + "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    rows = measure(args.device, args.seeds)
    text = markdown(rows, args.device, args.seeds)
    out = args.out or Path("benchmarks") / "results" / args.device.split(":")[0] / "accuracy.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
