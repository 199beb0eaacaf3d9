"""The script that measures where the time of a small InfoNCE call goes runs, times every
method it names, and compares one and the same loss (it refuses otherwise)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("fused_overhead", ROOT / "benchmarks" / "fused_overhead.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_has_every_method_and_size(tmp_path):
    out = tmp_path / "table.md"
    _script().main(["--repeats", "3", "--batch-size", "4", "--k", "16", "--dims", "8", "12", "--out", str(out)])
    rows = [line.split("|")[1:-1] for line in out.read_text().splitlines() if line.startswith("| ") and "---" not in line]
    body = [[c.strip() for c in r] for r in rows[1:]]
    methods = ["materialised", "info_nce", "info_nce, require_unit_norm=False", "fused", "fused, no norm check",
               "matmul"]
    assert [(r[0], r[1]) for r in body] == [(d, m) for d in ("8", "12") for m in methods]
    for _, method, micro, ratio in body:
        assert float(micro) >= 0 and float(ratio) > 0
        if method == "materialised":
            assert ratio == "1.00"


def test_the_timed_losses_agree():
    # measure() checks that info_nce and the fused function give F.cross_entropy's loss before
    # it times them; a mismatch would raise.
    best = _script().measure(B=5, d=7, k=11, tau=0.2, repeats=2)
    assert set(best) == {"materialised", "info_nce", "info_nce, require_unit_norm=False", "fused",
                         "fused, no norm check", "matmul"}
    assert all(t > 0 for t in best.values())


def test_a_different_loss_is_refused(monkeypatch):
    import infonce_book.losses

    real = infonce_book.losses.info_nce
    monkeypatch.setattr(infonce_book.losses, "info_nce", lambda a, p, n, tau, **kw: real(a, p, n, 2 * tau, **kw))
    with pytest.raises(RuntimeError, match="not the same loss"):
        _script().measure(B=5, d=7, k=11, tau=0.2, repeats=1)
