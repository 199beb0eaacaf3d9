"""Benchmark: the in-batch InfoNCE forms against the peer libraries and a plain composition.

Run from the repository root, in an environment with the peers (``benchmarks/README.md``; a
missing peer's column says ``missing``)::

    INFONCE_BOOK_NO_PROGRESS=1 python benchmarks/bench_in_batch.py --quick      # about 1 minute
    INFONCE_BOOK_NO_PROGRESS=1 python benchmarks/bench_in_batch.py              # the full grid
    INFONCE_BOOK_NO_PROGRESS=1 python benchmarks/bench_in_batch.py --memory     # peak memory

What is timed (float32 embeddings on the unit sphere, forward and backward with gradients for
both sides, one thread by default), for B in {64, 256, 1024, 4096} pairs and d in {128, 512}:

* ``clip``, CLIP's symmetric loss (tau = 0.07): ``info_nce_in_batch(symmetric=True)``, open_clip's
  ``ClipLoss`` (``logit_scale = 1/tau``), and the plain composition
  ``(F.cross_entropy(L, i) + F.cross_entropy(L^T, i)) / 2`` over ``L = z1 z2^T / tau``;
* ``rows``, one direction: ``info_nce_in_batch(symmetric=False)`` and ``F.cross_entropy(L, i)``;
* ``nt-xent``, SimCLR's loss over the 2B views (tau = 0.1): ``nt_xent``, lightly's
  ``NTXentLoss``, pytorch-metric-learning's ``NTXentLoss`` (the views with labels
  ``(i, i)``), and the plain composition: the (2B, 2B) logits with the diagonal at ``-inf`` and
  ``F.cross_entropy`` with each view's pair as target.

Timing: each method's call (forward, ``backward()``) is repeated ``inner`` times per sample
(enough for about 20 ms), the methods of a configuration interleaved sample by sample, so that
all see the same load on a shared machine; the reported time is the median over the samples
(``--repeats``, fewer for the largest configurations within ``--budget`` seconds). The ratio is
the peer's time over ``infonce_book``'s: above 1, ``infonce_book`` is faster.

``--memory``: peak memory of CLIP's symmetric loss, forward+backward, at ``--memory-batch`` (default
16384) pairs, each method in its own process: the growth of the peak resident set over the inputs
(as in ``bench_infonce.py``). It writes ``in_batch_memory.md``; the timings write
``in_batch.csv`` and ``in_batch.md`` (``--out`` to change the folder).
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import _peers  # noqa: E402  (beside this file)
from bench_infonce import _CHILD_ENV, _loadavg, _machine, _PeakMemory  # noqa: E402

FORMS = {
    "clip": ("infonce_book", "infonce_book unchecked", "open_clip", "composition"),
    "rows": ("infonce_book", "composition"),
    "nt-xent": ("infonce_book", "lightly", "pytorch-metric-learning", "composition"),
    # Diagnostic (``--forms clip-overhead``): the kernel called without the argument and unit-norm
    # checks and the function's dispatch, to show the fixed cost per call at small B.
    "clip-overhead": ("infonce_book", "kernel only", "open_clip", "composition"),
    # Under torch.autocast(bfloat16): the peers' products run in bfloat16; ours in float32 unless
    # asked for bfloat16 scoring (score_dtype=torch.bfloat16, "infonce_book bf16").
    "clip-autocast": ("infonce_book", "infonce_book bf16", "open_clip", "composition"),
    "nt-xent-autocast": ("infonce_book", "infonce_book bf16", "lightly", "composition"),
    # Labels (B / 4 classes of 4 pairs): same-class items left out of the negatives; SupCon.
    "clip-labels": ("infonce_book", "composition"),
    "supcon": ("infonce_book", "pytorch-metric-learning", "composition"),
}
LIBRARIES = ("open_clip", "lightly", "pytorch-metric-learning")
TAU = {"clip": 0.07, "rows": 0.07, "nt-xent": 0.1, "clip-overhead": 0.07, "clip-autocast": 0.07,
       "nt-xent-autocast": 0.1, "clip-labels": 0.07, "supcon": 0.1}
DEFAULT_FORMS = ("clip", "rows", "nt-xent", "clip-autocast", "nt-xent-autocast", "clip-labels", "supcon")
AUTOCAST_FORMS = ("clip-autocast", "nt-xent-autocast")
#: pytorch-metric-learning's NT-Xent holds a (2B (2B - 2), 2B) float mask; not run beyond 2 GiB.
PML_CAP_BYTES = 2 * 2**30


def _loss_fn(form, method, B, device):
    """The loss ``fn(z1, z2)`` of ``method`` for ``form``, or None if its library is missing (under
    ``torch.autocast(bfloat16)`` for the autocast forms)."""
    import torch

    fn = _plain_loss_fn(form, method, B, device)
    if fn is None or form not in AUTOCAST_FORMS:
        return fn

    def under_autocast(z1, z2):
        with torch.autocast(device.type, dtype=torch.bfloat16):
            return fn(z1, z2)
    return under_autocast


def _plain_loss_fn(form, method, B, device):
    import torch
    import torch.nn.functional as F

    from infonce_book.losses import info_nce_in_batch, nt_xent, supcon

    tau = TAU[form]
    labels = torch.arange(B, device=device)
    classes = labels % max(1, B // 4)  # B / 4 classes of 4 pairs each
    base = form.removesuffix("-autocast")
    if form == "clip-labels":
        if method == "infonce_book":
            return lambda z1, z2: info_nce_in_batch(z1, z2, tau, labels=classes)
        same = (classes[:, None] == classes[None, :]) & ~torch.eye(B, dtype=torch.bool, device=device)

        def clip_labels(z1, z2):
            logits = (z1 @ z2.T / tau).masked_fill(same, float("-inf"))
            return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2
        return clip_labels
    if form == "supcon":
        both = torch.cat([classes, classes])
        if method == "infonce_book":
            return lambda z1, z2: supcon(z1, z2, classes, tau)
        if method == "pytorch-metric-learning":
            cls = _peers.load_pml_supcon()
            if cls is None:
                return None
            loss = cls(temperature=tau)
            return lambda z1, z2: loss(torch.cat([z1, z2]), both)
        eye = torch.eye(2 * B, dtype=torch.bool, device=device)
        pos = (both[:, None] == both[None, :]) & ~eye

        def supcon_composition(z1, z2):  # Khosla et al.'s reference code, in torch
            v = torch.cat([z1, z2])
            logits = (v @ v.T / tau).masked_fill(eye, float("-inf"))
            log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
            return -(log_prob.masked_fill(~pos, 0.0).sum(1) / pos.sum(1)).mean()
        return supcon_composition
    if method == "infonce_book unchecked":
        return lambda z1, z2: info_nce_in_batch(z1, z2, tau, check_values=False)
    if method in ("infonce_book", "infonce_book bf16"):
        sd = torch.bfloat16 if method.endswith("bf16") else None
        if base == "nt-xent":
            return lambda z1, z2: nt_xent(z1, z2, tau, score_dtype=sd)
        return lambda z1, z2: info_nce_in_batch(z1, z2, tau, symmetric=base != "rows", score_dtype=sd)
    if method == "kernel only":
        from infonce_book.losses._pairwise import PairwiseInfoNCE
        from infonce_book.losses._variant import Variant

        exclude = labels.unsqueeze(-1)
        return lambda z1, z2: PairwiseInfoNCE.apply(z1, z2, None, tau, None, exclude, True, Variant.STANDARD,
                                                    torch.float32, "mean", (), B, None)
    if method == "composition":
        if base in ("clip", "clip-overhead"):
            def clip(z1, z2):
                logits = z1 @ z2.T / tau
                return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2
            return clip
        if base == "rows":
            return lambda z1, z2: F.cross_entropy(z1 @ z2.T / tau, labels)
        targets = torch.cat([labels + B, labels])

        def simclr(z1, z2):
            v = torch.cat([z1, z2])
            logits = (v @ v.T / tau).fill_diagonal_(float("-inf"))
            return F.cross_entropy(logits, targets)
        return simclr
    if method == "open_clip":
        cls = _peers.load_clip_loss()
        if cls is None:
            return None
        loss, scale = cls(cache_labels=True), torch.tensor(1.0 / tau, device=device)
        return lambda z1, z2: loss(z1, z2, scale)
    if method == "lightly":
        cls = _peers.load_lightly_ntxent()
        return None if cls is None else cls(temperature=tau)
    if method == "pytorch-metric-learning":
        cls = _peers.load_pml_ntxent()
        if cls is None:
            return None
        loss, both = cls(temperature=tau), torch.cat([labels, labels])
        return lambda z1, z2: loss(torch.cat([z1, z2]), both)
    raise ValueError(f"unknown method {method!r}")


def _inputs(B, d, device, seed=0):
    import torch

    g = torch.Generator().manual_seed(seed)
    z = [torch.nn.functional.normalize(torch.randn(B, d, generator=g), dim=-1).to(device) for _ in range(2)]
    return [t.requires_grad_() for t in z]


def _call(fn, z1, z2):
    z1.grad = z2.grad = None
    out = fn(z1, z2)
    out.backward()
    return out


def time_config(form, B, d, device, repeats, budget):
    """{method: result} for one configuration: median seconds per call over interleaved samples."""
    z1, z2 = _inputs(B, d, device)
    fns = {m: _loss_fn(form, m, B, device) for m in FORMS[form]}
    out = {m: {"status": "missing (not installed)"} for m, f in fns.items() if f is None}
    if form == "nt-xent" and "pytorch-metric-learning" in fns and (2 * B) ** 3 * 4 > PML_CAP_BYTES:
        fns.pop("pytorch-metric-learning")  # it forms a (pairs x views) mask: (2B)^3 floats
        out["pytorch-metric-learning"] = {"status": "skipped (memory)"}
    fns = {m: f for m, f in fns.items() if f is not None}
    inner, values, per_round = {}, {}, 0.0
    for m, f in fns.items():
        values[m] = float(_call(f, z1, z2).detach())  # warm-up
        t0 = time.perf_counter()
        _call(f, z1, z2)
        once = time.perf_counter() - t0
        inner[m] = max(1, math.ceil(0.02 / max(once, 1e-6)))
        per_round += inner[m] * once
    rounds = max(3, min(repeats, int(budget / per_round)))
    samples = {m: [] for m in fns}
    for _ in range(rounds):
        for m, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(inner[m]):
                _call(f, z1, z2)
            samples[m].append((time.perf_counter() - t0) / inner[m])
    ref = values.get("infonce_book")
    for m in fns:
        out[m] = {"status": "ok", "median_s": statistics.median(samples[m]), "min_s": min(samples[m]),
                  "samples": rounds, "inner": inner[m], "loss": values[m],
                  "rel_diff": abs(values[m] - ref) / abs(ref) if ref else None}
    return out


# ---- memory: each method in its own process ------------------------------------------------------

MEMORY_METHODS = ("infonce_book", "open_clip", "composition")


def memory_child(method, B, d):
    """Print the peak memory growth (bytes) of one forward+backward call of CLIP's loss."""
    import torch

    torch.set_num_threads(1)
    device = torch.device("cpu")
    z1, z2 = _inputs(B, d, device)
    fn = _loss_fn("clip", method, B, device)
    if fn is None:
        print(json.dumps({"status": "missing (not installed)"}))
        return
    with _PeakMemory(device) as peak:
        loss = _call(fn, z1, z2)
    from infonce_book.losses._pairwise import pairwise_tile

    print(json.dumps({"status": "ok", "peak_bytes": peak.peak, "loss": float(loss),
                      "tile": pairwise_tile(B, B, None) if method == "infonce_book" else None}))


def run_memory(B, d, timeout):
    results = {}
    for method in MEMORY_METHODS:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--memory-child", json.dumps([method, B, d])]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                                  env={**os.environ, **_CHILD_ENV})
            line = (proc.stdout.strip().splitlines() or ["{}"])[-1]
            results[method] = json.loads(line) if line.startswith("{") else {
                "status": f"failed ({(proc.stderr.strip().splitlines() or ['?'])[-1][:100]})"}
        except subprocess.TimeoutExpired:
            results[method] = {"status": f"failed (timeout {timeout} s)"}
        print(f"memory {method}: {results[method].get('status')}", file=sys.stderr, flush=True)
    return results


# ---- the report ----------------------------------------------------------------------------------

def _versions():
    from importlib import metadata

    out = {}
    for name, dist in (("open_clip", "open_clip_torch"), ("lightly", "lightly"),
                       ("pytorch-metric-learning", "pytorch-metric-learning")):
        try:
            out[name] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[name] = "missing"
    return out


def _ms(r):
    return f"{r['median_s'] * 1e3:,.2f}" if r.get("status") == "ok" else r.get("status", "—")


def _ratio(r, ref):
    if r.get("status") != "ok" or ref.get("status") != "ok":
        return "—"
    return f"{r['median_s'] / ref['median_s']:.2f}"


def evaluate_targets(rows):
    """The issue's targets from the measured rows: >= 1 against every library at every size,
    >= 1 against the composition from B = 1024."""
    worst = {}
    for (form, B, d), res in rows.items():
        ref = res["infonce_book"]
        for m, r in res.items():
            if m not in LIBRARIES + ("composition",) or r.get("status") != "ok" or ref.get("status") != "ok":
                continue
            if m == "composition" and B < 1024:
                continue
            ratio = r["median_s"] / ref["median_s"]
            key = "the composition (B >= 1024)" if m == "composition" else m
            if key not in worst or ratio < worst[key][0]:
                worst[key] = (ratio, form, B, d)
    out = [f"{key}'s time / infonce_book's: lowest {r:.2f} ({form}, B={B}, d={d}); target >= 1: "
           f"{'met' if r >= 1 else 'missed'}." for key, (r, form, B, d) in sorted(worst.items())]
    # Small batches (issue 38, item 3): the default path within 1.1x open_clip's time at B = 64,
    # the path without value checks within 1.2x the plain composition's.
    for (form, B, d), res in rows.items():
        if form != "clip" or B != 64:
            continue
        ours, unchecked = res.get("infonce_book", {}), res.get("infonce_book unchecked", {})
        for name, a, b, limit in (("infonce_book / open_clip", ours, res.get("open_clip", {}), 1.1),
                                  ("infonce_book unchecked / composition", unchecked, res.get("composition", {}), 1.2)):
            if a.get("status") == "ok" and b.get("status") == "ok":
                r = a["median_s"] / b["median_s"]
                out.append(f"{name} at B={B}, d={d}: {r:.2f}; target <= {limit}: {'met' if r <= limit else 'missed'}.")
    return out


def markdown_report(rows, meta):
    v = meta["versions"]
    lines = [
        "# In-batch InfoNCE against the peer libraries: cpu", "",
        f"Machine: {meta['machine']}; torch {meta['torch']}; {meta['threads']} thread(s); date {meta['date']}; "
        f"open_clip {v['open_clip']}, lightly {v['lightly']}, pytorch-metric-learning "
        f"{v['pytorch-metric-learning']}. Load average before/after the run: {meta['load_before']} / "
        f"{meta['load_after']}. Command: `{meta['command']}` ({meta['wall_s']:.0f} s). Generated by "
        "`benchmarks/bench_in_batch.py`; see `benchmarks/README.md`.", "",
        "Median milliseconds per forward+backward call (float32 unit vectors, gradients for both sides) "
        "over interleaved samples; `x / ours` is that method's time over infonce_book's (above 1: "
        "infonce_book is faster). clip: CLIP's symmetric loss, tau = 0.07; rows: one direction; nt-xent: "
        "SimCLR's loss over 2B views, tau = 0.1; `infonce_book unchecked`: `check_values=False`. "
        "`-autocast`: every method called under `torch.autocast('cpu', dtype=torch.bfloat16)` (the peers' "
        "products then run in bfloat16, ours in float32, or in bfloat16 with `score_dtype=torch.bfloat16`, "
        "`infonce_book bf16`; this CPU has no fast bfloat16 matrix multiply, so the bfloat16 products are "
        "slower here than float32 ones: these rows measure the overhead, not a GPU's speed-up). "
        "clip-labels: CLIP's loss with `labels=` (B/4 classes of 4 pairs; the composition masks the "
        "same-class logits); supcon: SupCon's L_out, tau = 0.1, same classes.", ""]
    for form, methods in FORMS.items():
        if not any(f == form for f, _, _ in rows):
            continue
        peers = methods[1:]
        lines += [f"## {form}", "",
                  "| B | d | " + " | ".join(f"{m} ms" for m in methods) + " | "
                  + " | ".join(f"{m} / ours" for m in peers) + " | samples |",
                  "|" + "---|" * (3 + len(methods) + len(peers))]
        for (f, B, d), res in rows.items():
            if f != form:
                continue
            ref = res["infonce_book"]
            lines.append(f"| {B} | {d} | " + " | ".join(_ms(res[m]) for m in methods) + " | "
                         + " | ".join(_ratio(res[m], ref) for m in peers) + f" | {ref.get('samples', '—')} |")
        lines.append("")
    diffs = [r["rel_diff"] for res in rows.values() for r in res.values() if r.get("rel_diff") is not None]
    lines += ["Targets (evaluated from the tables above):", ""]
    lines += [f"* {t}" for t in evaluate_targets(rows)]
    lines += ["", "Loss values agree across methods (largest relative difference from infonce_book in this "
              f"run: {max(diffs) if diffs else float('nan'):.1e}).", ""]
    return "\n".join(lines)


def write_timings(rows, meta, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "in_batch.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["form", "B", "d", "method", "status", "median_s", "min_s", "samples", "inner", "loss"])
        for (form, B, d), res in rows.items():
            for m, r in res.items():
                w.writerow([form, B, d, m, r.get("status"), r.get("median_s"), r.get("min_s"), r.get("samples"),
                            r.get("inner"), r.get("loss")])
    (out_dir / "in_batch.md").write_text(markdown_report(rows, meta))


def memory_report(results, B, d, meta):
    ours = results["infonce_book"]
    tile = ours.get("tile")
    how = (f"tiles of {tile} rows, chosen automatically" if tile and tile < B else "materialised")
    lines = ["# In-batch InfoNCE: peak memory, tiled against materialised: cpu", "",
             f"Machine: {meta['machine']}; torch {meta['torch']}; date {meta['date']}; command "
             f"`{meta['command']}`. CLIP's symmetric loss, B = {B} pairs, d = {d}, float32, forward+backward "
             "(gradients for both sides); each method in its own process; peak memory is the growth of the peak "
             "resident set over the inputs (includes the two (B, d) input gradients). The (B, B) float32 logit "
             f"matrix alone is {B * B * 4 / 2**20:,.0f} MiB; infonce_book streams it in {how}.", "",
             "| method | peak MiB | peak / infonce_book's | loss |", "|---|---|---|---|"]
    for m, r in results.items():
        if r.get("status") != "ok":
            lines.append(f"| {m} | {r.get('status')} | — | — |")
            continue
        ratio = r["peak_bytes"] / ours["peak_bytes"] if ours.get("status") == "ok" and ours["peak_bytes"] else None
        lines.append(f"| {m} | {r['peak_bytes'] / 2**20:,.1f} | {'—' if ratio is None else f'{ratio:.1f}'} | "
                     f"{r['loss']:.7g} |")
    return "\n".join(lines) + "\n"


def _meta(args, argv, t0, load_before):
    import torch

    return {"machine": _machine(torch.device("cpu")), "torch": torch.__version__, "threads": args.threads,
            "date": _dt.date.today().isoformat(), "load_before": load_before, "load_after": _loadavg(),
            "command": "python benchmarks/bench_in_batch.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "wall_s": time.perf_counter() - t0, "versions": _versions()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="output folder (default benchmarks/results/cpu)")
    ap.add_argument("--batch-sizes", default="64,256,1024,4096", help="comma-separated B values")
    ap.add_argument("--dims", default="128,512", help="comma-separated d values")
    ap.add_argument("--forms", default=",".join(DEFAULT_FORMS), help=f"subset of {','.join(FORMS)}")
    ap.add_argument("--quick", action="store_true", help="B in {64, 256, 1024}, d = 128, 9 samples")
    ap.add_argument("--repeats", type=int, default=15, help="samples per method (median taken)")
    ap.add_argument("--budget", type=float, default=20.0,
                    help="seconds per configuration; fewer samples (at least 3) where a round is long")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--memory", action="store_true", help="measure peak memory instead of time")
    ap.add_argument("--memory-batch", type=int, default=16384, help="B for --memory")
    ap.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.memory_child is not None:
        memory_child(*json.loads(args.memory_child))
        return 0
    import torch

    torch.set_num_threads(args.threads)
    out_dir = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / "cpu"
    t0, load_before = time.perf_counter(), _loadavg()
    if args.memory:
        d = int(args.dims.split(",")[0])
        results = run_memory(args.memory_batch, d, timeout=1200)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "in_batch_memory.md").write_text(memory_report(results, args.memory_batch, d,
                                                                  _meta(args, argv, t0, load_before)))
        return 0
    Bs = [64, 256, 1024] if args.quick else [int(x) for x in args.batch_sizes.split(",")]
    ds = [128] if args.quick else [int(x) for x in args.dims.split(",")]
    repeats = 9 if args.quick else args.repeats
    rows = {}
    forms = [f.strip() for f in args.forms.split(",") if f.strip()]
    for form in forms:  # a warm-up, not reported: the first calls of a process are slower
        time_config(form, 64, 128, torch.device("cpu"), 3, 1.0)
    for form in forms:
        for B in Bs:
            for d in ds:
                t1 = time.perf_counter()
                rows[(form, B, d)] = res = time_config(form, B, d, torch.device("cpu"), repeats, args.budget)
                ref = res["infonce_book"]
                print(f"{form} B={B} d={d}: " + ", ".join(
                    f"{m} {_ratio(r, ref) if m != 'infonce_book' else _ms(r)}" for m, r in res.items())
                    + f" ({time.perf_counter() - t1:.0f} s)", file=sys.stderr, flush=True)
    write_timings(rows, _meta(args, argv, t0, load_before), out_dir)
    print(f"wrote {out_dir}/in_batch.csv and in_batch.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
