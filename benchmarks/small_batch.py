"""CLIP's in-batch loss at a small batch (B = 64, d = 128 by default), forward+backward, side by side
with open_clip's ``ClipLoss`` and plain ``F.cross_entropy`` compositions, timed with
``torch.utils.benchmark.Timer.blocked_autorange`` in one process, one thread; also counts the
top-level ATen operations of one call (``torch.profiler``), which set the floor at this size.

    INFONCE_BOOK_NO_PROGRESS=1 python benchmarks/small_batch.py --out benchmarks/results/cpu/quick/small_batch.md

The peers load as in ``bench_in_batch.py`` (``benchmarks/_peers.py``; a missing one is left out).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys

import torch
import torch.nn.functional as F
from torch.utils.benchmark import Timer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _peers import load_clip_loss

from infonce_book.losses import info_nce_in_batch


def methods(B: int, d: int, tau: float) -> tuple[dict, tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    z1 = F.normalize(torch.randn(B, d, generator=g), dim=-1).requires_grad_()
    z2 = F.normalize(torch.randn(B, d, generator=g), dim=-1).requires_grad_()
    labels = torch.arange(B) % max(1, B // 4)  # B / 4 classes of 4 pairs (as bench_in_batch's clip-labels)
    target = torch.arange(B)

    def composition():
        logits = z1 @ z2.T / tau
        return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2

    def composition_labels():  # same-class candidates other than the positive left out
        logits = z1 @ z2.T / tau
        same = (labels[:, None] == labels[None, :]) & ~torch.eye(B, dtype=torch.bool)
        logits = logits.masked_fill(same, float("-inf"))
        return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2

    out = {
        "infonce_book": lambda: info_nce_in_batch(z1, z2, tau),
        "infonce_book check_values=False": lambda: info_nce_in_batch(z1, z2, tau, check_values=False),
        "composition": composition,
        "infonce_book labels": lambda: info_nce_in_batch(z1, z2, tau, labels=labels),
        "infonce_book labels check_values=False": lambda: info_nce_in_batch(z1, z2, tau, labels=labels,
                                                                            check_values=False),
        "composition labels": composition_labels,
    }
    clip_cls = load_clip_loss()
    if clip_cls is not None:
        clip = clip_cls()
        scale = torch.tensor(1.0 / tau)
        out["open_clip"] = lambda: clip(z1, z2, scale)
    return out, (z1, z2)


def top_level_ops(fn) -> int:
    """The ATen operations of one forward+backward call not called by another ATen operation."""
    from torch.profiler import profile

    for _ in range(3):
        fn().backward()
    with profile() as prof:
        fn().backward()
    return sum(1 for e in prof.events() if e.name.startswith("aten::")
               and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--tau", type=float, default=0.07)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every method, interleaved (the least is kept)")
    ap.add_argument("--min-run-time", type=float, default=1.0, help="seconds per blocked_autorange")
    ap.add_argument("--out", default=None, help="write the markdown table here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    load_before = os.getloadavg()
    fns, _ = methods(args.batch_size, args.dim, args.tau)
    times: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, fn in fns.items():
            t = Timer("fn().backward()", globals={"fn": fn}).blocked_autorange(min_run_time=args.min_run_time)
            times[name] = min(times.get(name, float("inf")), t.median)
    ops = {name: top_level_ops(fn) for name, fn in fns.items()}
    load_after = os.getloadavg()

    def ratio(a: str, b: str) -> str:
        return f"{times[a] / times[b]:.2f}" if a in times and b in times else "—"

    lines = [
        f"# CLIP's loss at B = {args.batch_size}, d = {args.dim}: the fixed cost per call",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} logical cores; torch {torch.__version__}; 1 thread; date "
        f"{datetime.date.today()}; load average before/after the run: "
        f"{' '.join(f'{x:.2f}' for x in load_before)} / {' '.join(f'{x:.2f}' for x in load_after)} (the machine "
        f"was shared with other work: times can be high by that much). Forward+backward, float32 unit vectors, "
        f"gradients for both sides, tau = {args.tau}; the least of {args.rounds} interleaved rounds of "
        f"`torch.utils.benchmark.Timer(...).blocked_autorange(min_run_time={args.min_run_time})` medians. "
        f"Generated by `benchmarks/small_batch.py`.",
        "",
        "| method | us per call | top-level ATen ops per call |",
        "|---|---|---|",
        *(f"| {name} | {times[name] * 1e6:.0f} | {ops[name]} |" for name in fns),
        "",
        "Ratios (time over time): "
        f"infonce_book / open_clip {ratio('infonce_book', 'open_clip')} (target <= 1.1); "
        f"check_values=False / composition {ratio('infonce_book check_values=False', 'composition')} "
        f"(target <= 1.2); labelled / composition labels "
        f"{ratio('infonce_book labels', 'composition labels')}.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
