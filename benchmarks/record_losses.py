"""Record the losses' values, gradients and error messages over a grid of cases, or compare a new
record with an old one bit for bit (``torch.equal``; messages as strings).

Used to check that a refactoring of the loss kernels changes nothing::

    python benchmarks/record_losses.py --out /tmp/before.pt      # before the change
    python benchmarks/record_losses.py --compare /tmp/before.pt  # after it: counts compared/identical

The grid: both variants, every public loss function and module, float32 and float64, with and
without labels and extra negatives, the fused, chunked (``chunk_size``), tiled and materialised
paths, float ``tau``, tensor ``tau`` and ``logit_scale`` at ordinary values, value checks on and
off, and a set of invalid calls whose messages are recorded.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from infonce_book import losses as L


def _unit(*shape: int, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    return F.normalize(torch.randn(*shape, generator=gen, dtype=torch.float64), dim=-1).to(dtype)


def _run(fn: Callable[..., torch.Tensor], tensors: dict[str, torch.Tensor], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Value and gradients (in every tensor that requires one) of ``fn(**tensors, **kwargs)``, or
    the error's type and message."""
    leaves = {k: v.detach().clone().requires_grad_(v.is_floating_point()) for k, v in tensors.items()}
    extra = {}
    for k, v in kwargs.items():
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            v = v.detach().clone().requires_grad_(True)
            leaves[k] = v
        extra[k] = v
    try:
        out = fn(**{k: leaves[k] for k in tensors}, **extra)
        out.sum().backward()
    except Exception as e:  # (the message is what is recorded)
        return {"error": f"{type(e).__name__}: {e}"}
    return {"value": out.detach(), **{f"grad_{k}": v.grad for k, v in leaves.items() if v.grad is not None}}


def cases() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    gen = torch.Generator().manual_seed(0)
    for dtype, variant, check in itertools.product((torch.float32, torch.float64), L.VARIANTS, (True, False)):
        tag = f"{str(dtype)[6:]}-{variant}-check{int(check)}"
        base = dict(variant=variant, check_values=check)
        for B, d, k in ((8, 16, 6), (40, 8, 50)):
            a, p = _unit(B, d, dtype=dtype, gen=gen), _unit(B, d, dtype=dtype, gen=gen)
            p = F.normalize(a + p, dim=-1)
            shared, per = _unit(k, d, dtype=dtype, gen=gen), _unit(B, k, d, dtype=dtype, gen=gen)
            labels = torch.randint(0, 3, (B,), generator=gen)
            temps = {"tau": dict(tau=0.1), "tautensor": dict(tau=torch.tensor(0.2, dtype=dtype)),
                     "scale": dict(logit_scale=torch.tensor(2.5, dtype=dtype))}
            for (tname, temp), chunk, red in itertools.product(temps.items(), (None, 4), ("mean", "none")):
                kw = dict(base, reduction=red, chunk_size=chunk, **temp)
                name = f"{tag}-B{B}-{tname}-chunk{chunk}-{red}"
                out[f"info_nce-shared-{name}"] = _run(L.info_nce, dict(anchor=a, positive=p, negatives=shared), kw)
                out[f"info_nce-per-{name}"] = _run(L.info_nce, dict(anchor=a, positive=p, negatives=per), kw)
                for sym in (True, False):
                    out[f"in_batch-sym{int(sym)}-{name}"] = _run(L.info_nce_in_batch, dict(z1=a, z2=p),
                                                                 dict(kw, symmetric=sym))
                    out[f"in_batch-labels-sym{int(sym)}-{name}"] = _run(
                        L.info_nce_in_batch, dict(z1=a, z2=p), dict(kw, symmetric=sym, labels=labels))
                out[f"in_batch-negs-{name}"] = _run(L.info_nce_in_batch, dict(z1=a, z2=p),
                                                    dict(kw, negatives=shared))
                out[f"nt_xent-{name}"] = _run(L.nt_xent, dict(z1=a, z2=p), kw)
                out[f"nt_xent-labels-{name}"] = _run(L.nt_xent, dict(z1=a, z2=p), dict(kw, labels=labels))
                if "tau" in temp:
                    s_pos = (a * p).sum(-1)
                    s_neg = a @ shared.T
                    sim_kw = {k: v for k, v in kw.items() if k not in ("logit_scale",)}
                    out[f"from_sims-{name}"] = _run(L.info_nce_from_similarities, dict(s_pos=s_pos, s_neg=s_neg),
                                                    sim_kw)
                    stream_kw = {k: v for k, v in sim_kw.items() if k != "chunk_size"}
                    out[f"streaming-{name}"] = _run(
                        lambda s_pos, s_neg, **k: L.info_nce_streaming(s_pos, s_neg.split(3, dim=1), **k),
                        dict(s_pos=s_pos, s_neg=s_neg), stream_kw)
                skw = {k: v for k, v in kw.items() if k != "variant"}
                out[f"supcon-{name}"] = _run(L.supcon, dict(z1=a, z2=p, labels=labels), skw)
            # tiled pairwise kernel (chunk_size below B)
            out[f"in_batch-tiled-{tag}-B{B}"] = _run(L.info_nce_in_batch, dict(z1=a, z2=p),
                                                     dict(base, tau=0.1, chunk_size=3))
            out[f"nt_xent-tiled-{tag}-B{B}"] = _run(L.nt_xent, dict(z1=a, z2=p), dict(base, tau=0.1, chunk_size=3))
            # modules
            for learn in (False, True):
                opts = dict(learn_temperature=learn, variant=variant, check_values=check)
                for cls, ins in ((L.InfoNCELoss, (a, p, shared)), (L.InBatchInfoNCELoss, (a, p)),
                                 (L.NTXentLoss, (a, p))):
                    torch.manual_seed(0)
                    mod = cls(**opts).to(dtype)
                    out[f"module-{cls.__name__}-learn{int(learn)}-{tag}-B{B}"] = _run(
                        lambda mod=mod, **t: mod(*t.values()), {f"x{i}": x for i, x in enumerate(ins)}, {})
                    if learn:
                        mod.zero_grad()
                        leaves = [x.detach().clone().requires_grad_(True) for x in ins]
                        mod(*leaves).backward()
                        out[f"module-{cls.__name__}-scalegrad-{tag}-B{B}"] = {"grad": mod.logit_scale.grad}
        # errors
        z = _unit(1, 4, dtype=dtype, gen=gen)
        out[f"err-decoupled-B1-{tag}"] = _run(L.info_nce_in_batch, dict(z1=z, z2=z), dict(base, tau=0.1))
        out[f"err-ntxent-B1-{tag}"] = _run(L.nt_xent, dict(z1=z, z2=z), dict(base, tau=0.1))
        zz = _unit(4, 4, dtype=dtype, gen=gen)
        out[f"err-badvariant-{tag}"] = _run(L.info_nce_in_batch, dict(z1=zz, z2=zz), dict(tau=0.1, variant="x"))
        out[f"err-badred-{tag}"] = _run(L.nt_xent, dict(z1=zz, z2=zz), dict(tau=0.1, reduction="x"))
        out[f"err-notau-{tag}"] = _run(L.info_nce_in_batch, dict(z1=zz, z2=zz), dict(base))
        out[f"err-bothtau-{tag}"] = _run(L.info_nce_in_batch, dict(z1=zz, z2=zz),
                                         dict(base, tau=0.1, logit_scale=torch.tensor(1.0)))
        out[f"err-smalltau-{tag}"] = _run(L.info_nce_in_batch, dict(z1=zz, z2=zz), dict(base, tau=1e-300))
        out[f"err-negs-k0-{tag}"] = _run(L.info_nce, dict(anchor=zz, positive=zz, negatives=zz[:0]),
                                         dict(base, tau=0.1))
        lab = torch.zeros(4, dtype=torch.long)
        out[f"err-alllabels-{tag}"] = _run(L.info_nce_in_batch, dict(z1=zz, z2=zz), dict(base, tau=0.1, labels=lab))
        out[f"err-offsphere-{tag}"] = _run(L.info_nce_in_batch, dict(z1=zz * 2, z2=zz), dict(base, tau=0.1))
    return out


def compare(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> tuple[int, int, list[str]]:
    """``(compared, identical, differing names)`` over the cases of ``old`` (a case missing from
    ``new`` differs)."""
    same, diff = 0, []
    for name, rec in old.items():
        other = new.get(name)
        ok = other is not None and rec.keys() == other.keys() and all(
            (torch.equal(v, other[k]) and v.dtype == other[k].dtype) if isinstance(v, torch.Tensor) else v == other[k]
            for k, v in rec.items())
        if ok:
            same += 1
        else:
            diff.append(name)
    return len(old), same, diff


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--out", help="write the record to this file (torch.save)")
    group.add_argument("--compare", help="compare the current code's record with this file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    record = cases()
    if args.out:
        torch.save(record, args.out)
        errors = sum("error" in r for r in record.values())
        print(f"recorded {len(record)} cases ({errors} errors) to {args.out}")
        return
    compared, identical, diff = compare(torch.load(args.compare), record)
    print(f"compared {compared} cases: {identical} identical, {len(diff)} differ")
    for name in diff[:200]:
        print("  differs:", name)


if __name__ == "__main__":
    main()
