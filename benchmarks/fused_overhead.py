"""Where the time of a small InfoNCE call goes: the fused path against ``F.cross_entropy``.

At B = 32 anchors and k = 1e3 shared negatives (the smallest size of ``bench_infonce.py``) one
forward+backward call takes a few tenths of a millisecond, and the two matrix multiplies (scores
``A N^T`` and the weighted sum ``Q N``) are about a third to two thirds of it. This script times,
in one process and interleaved (each round calls every method once, in an order that rotates
from round to round, so that all see the same machine load and none always follows the same
one), the fastest of many forward+backward calls of

* ``materialised``: ``F.cross_entropy`` over the ``B x (k + 1)`` logits (as in the benchmark;
  it checks shapes and targets, not the values of the embeddings);
* ``info_nce``: :func:`infonce_book.losses.info_nce` as a user calls it (argument checks, the
  unit-norm checks of anchors, positives and negatives, the fused path);
* ``info_nce, require_unit_norm=False``: the same without the unit-norm checks; the entries are
  then checked finite instead (one summation per input);
* ``fused``: the fused autograd function that :func:`info_nce` calls at this size, called
  directly (the unit-norm checks on): the difference to ``info_nce`` is the argument checks and
  the dispatch in Python (types, shapes, options, tau, the autocast guard);
* ``fused, no norm check``: the same without the unit-norm checks (not a public entry point: it
  shows what the norm checks cost). What is left against ``materialised`` is the custom autograd
  function's Python forward and backward and the read of the loss (for overflow);
* ``matmul``: the two matrix multiplies alone, without autograd (the floor of any exact method).

Before timing, the script checks (without gradients) that ``info_nce``, its
``require_unit_norm=False`` form and ``fused`` give ``F.cross_entropy``'s loss to 1e-5 relative,
and refuses to time them otherwise; each method is warmed up with 50 calls. It writes a markdown
table (microseconds per call and the ratio to ``materialised``; above 1 is faster). Usage::

    python benchmarks/fused_overhead.py --threads 1 [--repeats 4000] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_infonce  # the benchmark's inputs and materialised loss


def _time_calls(fns, repeats):
    """Fastest forward+backward time (seconds) of each callable, interleaved call by call; the
    order rotates every round, so that no method always follows the same one (the caches and the
    allocator are left in a state that depends on the call before)."""
    best = {name: float("inf") for name in fns}
    names = list(fns)
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn = fns[name]
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def measure(B, d, k, tau, repeats, seed=0):
    """``{method: seconds}`` for one size (see the module docstring for the methods). The inputs
    and the materialised loss are the benchmark's own (``bench_infonce._make_inputs`` and
    ``bench_infonce._method_fns``)."""
    import torch

    from infonce_book.losses import info_nce
    from infonce_book.losses._fused import FusedInfoNCE
    from infonce_book.losses._variant import Variant

    cfg = {"B": B, "d": d, "k": k, "tau": tau, "layout": "shared", "chunk_size": None, "method": "materialised"}
    device = torch.device("cpu")
    a, p, n = bench_infonce._make_inputs(cfg, device, generator_seed=seed)
    a.requires_grad_()
    p.requires_grad_()
    materialised_fwd, materialised_fb = bench_infonce._method_fns(cfg, device)
    checks = ((a, "anchor"), (p, "positive"), (n, "negatives"))
    q = torch.softmax(a.detach() @ n.T / tau, dim=-1)
    losses = {  # "fused, no norm check" is "fused" with the checks left out
        "info_nce": lambda: info_nce(a, p, n, tau),
        "info_nce, require_unit_norm=False": lambda: info_nce(a, p, n, tau, require_unit_norm=False),
        "fused": lambda: FusedInfoNCE.apply(a, p, n, None, tau, Variant.STANDARD, torch.float32, None, "mean",
                                            checks),
        "fused, no norm check": lambda: FusedInfoNCE.apply(a, p, n, None, tau, Variant.STANDARD, torch.float32,
                                                           None, "mean", ()),
    }

    def fb(loss):
        def call():
            a.grad = p.grad = None
            loss().backward()
        return call

    def matmul():
        with torch.no_grad():
            torch.mm(a, n.T)
            torch.mm(q, n)

    fns = {"materialised": lambda: materialised_fb(a, p, n), **{m: fb(loss) for m, loss in losses.items()},
           "matmul": matmul}
    # The InfoNCE callables compute F.cross_entropy's loss (else the comparison means nothing).
    reference = float(materialised_fwd(a, p, n))
    with torch.no_grad():
        values = {m: float(losses[m]()) for m in ("info_nce", "info_nce, require_unit_norm=False", "fused")}
    for name, value in values.items():
        if abs(value - reference) > 1e-5 * abs(reference):
            raise RuntimeError(f"{name} gives {value!r}, F.cross_entropy {reference!r}: not the same loss")
    for fn in fns.values():  # warm-up
        for _ in range(50):
            fn()
    return _time_calls(fns, repeats)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as the benchmark)")
    parser.add_argument("--repeats", type=int, default=4000, help="calls per method (the fastest is kept)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--dims", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--tau", type=float, default=0.1)
    parser.add_argument("--out", default=None, help="write the table here too (markdown)")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        f"# Fused InfoNCE path: where the time goes (B = {args.batch_size}, k = {args.k}, tau = {args.tau})",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical cores; torch "
        f"{torch.__version__}; {torch.get_num_threads()} thread(s); date {datetime.date.today()}; load average "
        f"before the run {load}. Fastest of {args.repeats} interleaved forward+backward calls each (`matmul`: "
        f"the two products alone, without autograd). Generated by `benchmarks/fused_overhead.py`.",
        "",
        "| d | method | time per call (us) | materialised / method |",
        "|---|---|---|---|",
    ]
    for d in args.dims:
        best = measure(args.batch_size, d, args.k, args.tau, args.repeats)
        ref = best["materialised"]
        for name, t in best.items():
            lines.append(f"| {d} | {name} | {t * 1e6:.0f} | {ref / t:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
