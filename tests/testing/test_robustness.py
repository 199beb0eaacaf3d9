"""Robustness: every documented bad input, the float32 numerics guarantee, closed forms at extreme
parameters, determinism, and the pipeline's failure modes (book: "Input validation and failure
modes")."""

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from html import unescape
from pathlib import Path

import jupytext
import pandas as pd
import pytest
import torch

from infonce_book.chapters import c1_rate, c2_search, c3_temperature
from infonce_book.experiment.cache import cached
from infonce_book.experiment.ledger import Ledger
from infonce_book.experiment.paths import source_hash
from infonce_book.losses import info_nce, info_nce_from_similarities, info_nce_streaming
from infonce_book.models import FiniteModel, VonMisesFisher
from infonce_book.pipeline import run as pipeline
from infonce_book.testing.bad_inputs import EXIT_2, bad_inputs, markdown_table, run_cli
from infonce_book.theory.estimators import monte_carlo_bias
from infonce_book.theory.exact import exact_bias

from ..pipeline.support import CLI, HEADER, PARAMETERS, minimal_project

ROOT = Path(__file__).resolve().parents[2]
CASES = bad_inputs()
HAS_CUDA = torch.cuda.is_available()


@pytest.fixture
def project(tmp_path):
    return minimal_project(tmp_path)


# ---------------------------------------------------------------------------------------------
# 1. Bad input: one parametrised case per row of the book's table.


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_raises_the_documented_error_naming_the_argument(case, monkeypatch):
    if case.needs_no_gpu and HAS_CUDA:
        pytest.skip("this machine has a CUDA GPU: 'cuda' is a valid device here")
    monkeypatch.setenv("INFONCE_BOOK_ROOT", str(ROOT))  # chapter names resolve against this book
    fragments = (case.argument, *case.message)
    if case.error == EXIT_2:
        code, stderr = run_cli(case.call)
        assert code == 2, stderr
        for fragment in fragments:
            assert fragment in stderr, (fragment, stderr)
        return
    with pytest.raises(case.error) as info:
        case.call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


def test_the_bad_input_table_covers_at_least_25_distinct_cases_of_every_category():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)) >= 25  # distinct
    text = " ".join(f"{c.function} {c.argument} {c.given} {c.accepted}" for c in CASES)
    # The categories of the issue: temperatures, k, shapes, NaN/inf, the sphere, stochastic
    # kernels, dimensions, kappa, choices, devices, integer tensors, empty batches, the CLI.
    for word in ("tau", "k (number of negatives)", "shape", "NaN", "norm 1", "row-stochastic", "dim", "kappa",
                 "variant", "reduction", "profile", "device", "cuda", "int64", "B = 0", "infonce-book",
                 "chapter"):
        assert word in text, word
    errors = {c.error_name for c in CASES}
    assert errors >= {"ValueError", "TypeError", "OverflowError", EXIT_2}


def test_the_book_page_renders_this_very_list_as_its_table():
    nb = jupytext.read(ROOT / "book" / "robustness.md")
    cells = [c for c in nb.cells if c.cell_type == "code" and "markdown_table()" in c.source]
    assert len(cells) == 1 and "remove-input" in cells[0].metadata.get("tags", [])
    table = markdown_table(CASES)
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) == len(CASES)  # one row per tested case, nothing else
    for case, row in zip(CASES, rows):
        assert case.function in row and case.error_name in row
    # The page renders it in its own cell: the pipeline does not generate it (nor import testing).
    assert "validation-table" not in pipeline.GENERATED_SECTIONS


@pytest.mark.book
def test_the_rendered_robustness_page_has_one_row_per_case(smoke_book):
    html = (smoke_book.html / "book" / "robustness.html").read_text()
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    assert body.count("<tr") == len(CASES)
    # Compare with the text a reader sees: Sphinx renders `infonce-book run` as one <span> per word.
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body)))
    for case in CASES:
        assert case.function in text, case.function


# ---------------------------------------------------------------------------------------------
# 2. Numerics.


def _unit32(*shape, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float64)
    return (x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)).float()


def _materialised_float64(a, p, n, tau):
    """Reference: the float32 inputs in float64, the whole logit matrix, torch.logsumexp and autograd."""
    ins = [t.detach().double().requires_grad_() for t in (a, p, n)]
    s_pos = (ins[0] * ins[1]).sum(-1)
    s_neg = ins[0] @ ins[2].T if ins[2].dim() == 2 else torch.einsum("bd,bkd->bk", ins[0], ins[2])
    z = torch.cat([torch.zeros_like(s_pos)[:, None], (s_neg - s_pos[:, None]) / tau], dim=1)
    loss = torch.logsumexp(z, dim=1)
    loss.sum().backward()
    return loss.detach(), [t.grad for t in ins]


def _normwise(got, want):
    return float((got.double() - want).abs().max() / want.abs().max())


REQUIRED = 1e-6  # the book's guarantee for float32 inputs with accumulate=torch.float64


@pytest.fixture
def one_thread():
    """Small tensors in many chunks: on a loaded machine torch's per-operation thread start-up
    dominates (seconds instead of milliseconds), so these tests use one thread."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("tau", [1e-4, 1e-2, 1.0, 1e2])
@pytest.mark.parametrize("layout", ["shared", "per-anchor"])
def test_float32_inputs_with_float64_accumulation_match_the_float64_reference_for_any_tau(tau, layout):
    a, p = _unit32(6, 4, seed=1), _unit32(6, 4, seed=2)
    n = _unit32(500, 4, seed=3) if layout == "shared" else _unit32(6, 80, 4, seed=3)
    want, want_grads = _materialised_float64(a, p, n, tau)
    ins = [t.clone().requires_grad_() for t in (a, p, n)]
    got = info_nce(*ins, tau, reduction="none", chunk_size=37, accumulate=torch.float64)
    got.sum().backward()
    assert ((got - want).abs() <= REQUIRED * want.abs()).all()
    for t, w in zip(ins, want_grads):
        assert t.grad.dtype == torch.float32 and _normwise(t.grad, w) <= REQUIRED


@pytest.mark.parametrize("tau", [1e-4, 1e-2, 1.0, 1e2])
def test_float32_similarities_with_float64_accumulation_match_the_float64_reference(tau):
    a, p, n = _unit32(5, 4, seed=4), _unit32(5, 4, seed=5), _unit32(300, 4, seed=6)
    s_pos, s_neg = (a * p).sum(-1), a @ n.T  # float32 similarities
    sp64, sn64 = s_pos.double().requires_grad_(), s_neg.double().requires_grad_()
    want = torch.logsumexp(torch.cat([torch.zeros(5, 1, dtype=torch.float64), (sn64 - sp64[:, None]) / tau], 1), 1)
    want.sum().backward()
    sp, sn = s_pos.clone().requires_grad_(), s_neg.clone().requires_grad_()
    got = info_nce_from_similarities(sp, sn, tau, reduction="none", chunk_size=64, accumulate=torch.float64)
    got.sum().backward()
    assert ((got - want.detach()).abs() <= REQUIRED * want.detach().abs()).all()
    assert _normwise(sp.grad, sp64.grad) <= REQUIRED and _normwise(sn.grad, sn64.grad) <= REQUIRED
    streamed = info_nce_streaming(s_pos, torch.split(s_neg, 77, dim=1), tau, reduction="none",
                                  accumulate=torch.float64)
    assert ((streamed - want.detach()).abs() <= REQUIRED * want.detach().abs()).all()


@pytest.mark.parametrize("tau", [1e-4, 1e-2, 1.0, 1e2])
def test_a_million_negatives_streamed_in_chunks_match_the_float64_reference(tau, one_thread):
    # B = 2, d = 4, k = 10^6 negatives scored in chunks of 2^16 (the reference materialises the
    # 2 x 10^6 logits, 16 MB in float64).
    a, p, n = _unit32(2, 4, seed=7), _unit32(2, 4, seed=8), _unit32(10**6, 4, seed=9)
    want, want_grads = _materialised_float64(a, p, n, tau)
    ins = [t.clone().requires_grad_() for t in (a, p, n)]
    got = info_nce(*ins, tau, reduction="none", chunk_size=2**16, accumulate=torch.float64)
    got.sum().backward()
    assert ((got - want).abs() <= REQUIRED * want.abs()).all()
    for t, w in zip(ins, want_grads):
        assert _normwise(t.grad, w) <= REQUIRED


@pytest.mark.parametrize("tau", [1e-4, 1e-2, 1.0, 1e2])
def test_default_float32_accumulation_is_within_its_stated_bound(tau):
    # The stated accuracy of the fast path (book page, "Numerics"): loss and gradients within
    # 4 eps32 (1 + 2/tau) of the float64 reference (relative; gradients normwise), k <= 10^4.
    bound = 4 * 2.0**-23 * (1 + 2 / tau)
    a, p, n = _unit32(8, 4, seed=10), _unit32(8, 4, seed=11), _unit32(2000, 4, seed=12)
    want, want_grads = _materialised_float64(a, p, n, tau)
    ins = [t.clone().requires_grad_() for t in (a, p, n)]
    got = info_nce(*ins, tau, reduction="none", chunk_size=512)
    got.sum().backward()
    assert got.dtype == torch.float32
    assert ((got.double() - want).abs() <= bound * want.abs()).all()
    for t, w in zip(ins, want_grads):
        assert _normwise(t.grad, w) <= bound
    if tau <= 1e-2:  # and the fast path does not meet 1e-6 there: the guarantee needs float64
        assert max(_normwise(t.grad, w) for t, w in zip(ins, want_grads)) > REQUIRED


def test_extreme_case_in_every_entry_point_is_the_closed_form_with_the_exact_gradient(one_thread):
    # Positive at cosine -1, every negative at +1, tau = 0.01: l = log(1 + k e^{200}), computed
    # stably as 200 + log k + log1p(e^{-200}/k) (float64: e^{-200} is representable). Gradient in
    # s+: -beta (1 - p+) with p+ = 1/(1 + k e^{200}); in each s_j: beta e^{200}/(1 + k e^{200}).
    tau, beta = 0.01, 100.0
    e1 = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64)
    for k in (1, 10, 10**6):
        closed = 200.0 + math.log(k) + math.log1p(math.exp(-200.0) / k)
        p_pos = 1.0 / (1.0 + k * math.exp(200.0))
        s_pos = torch.full((1,), -1.0, dtype=torch.float64, requires_grad=True)
        s_neg = torch.full((1, k), 1.0, dtype=torch.float64, requires_grad=True)
        loss = info_nce_from_similarities(s_pos, s_neg, tau, reduction="sum", chunk_size=4096)
        loss.backward()
        assert loss.item() == pytest.approx(closed, rel=1e-15)
        assert s_pos.grad.item() == pytest.approx(-beta * (1.0 - p_pos), rel=1e-15) and s_pos.grad.item() != 0
        torch.testing.assert_close(s_neg.grad, torch.full((1, k), beta * (1.0 - p_pos) / k, dtype=torch.float64),
                                   rtol=1e-13, atol=0)
        streamed = info_nce_streaming(s_pos.detach(), torch.split(s_neg.detach(), 65536, dim=1), tau)
        assert streamed.item() == pytest.approx(closed, rel=1e-15)
        # From embeddings: anchor e1, positive -e1, negatives e1 (shared); float32 embeddings too.
        for dtype, rel in ((torch.float64, 1e-15), (torch.float32, 1e-6)):
            a = e1.to(dtype).clone().requires_grad_()
            pos = (-e1).to(dtype).clone().requires_grad_()
            neg = e1.expand(k, 3).to(dtype).clone().requires_grad_()
            lo = info_nce(a, pos, neg, tau, chunk_size=4096)
            lo.backward()
            assert lo.item() == pytest.approx(closed, rel=rel)
            # d l / d anchor = beta (sum_j p_j n_j - (1 - p+) positive) = beta (1 - p+) 2 e1
            assert a.grad[0, 0].item() == pytest.approx(2 * beta * (1 - p_pos), rel=rel)
            assert torch.isfinite(neg.grad).all() and neg.grad.abs().sum() > 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("tau", [1e-4, 1e-2, 1.0, 1e2])
def test_half_precision_similarities_give_finite_results_within_their_precision(dtype, tau):
    # (The embedding path is covered in test_losses.py.) Inputs rounded to the dtype, computed in
    # float32: the error is float32's, about eps32 (1 + 2/tau) relative, on the rounded inputs.
    g = torch.Generator().manual_seed(13)
    s_pos = (torch.rand(4, generator=g) * 2 - 1).to(dtype)
    s_neg = (torch.rand(4, 50, generator=g) * 2 - 1).to(dtype)
    sp, sn = s_pos.clone().requires_grad_(), s_neg.clone().requires_grad_()
    got = info_nce_from_similarities(sp, sn, tau, reduction="none")
    got.sum().backward()
    assert got.dtype == torch.float32 and torch.isfinite(got).all()
    assert torch.isfinite(sp.grad).all() and torch.isfinite(sn.grad).all() and sn.grad.dtype == dtype
    want = torch.logsumexp(torch.cat([torch.zeros(4, 1, dtype=torch.float64),
                                      (s_neg.double() - s_pos.double()[:, None]) / tau], 1), 1)
    assert ((got.double() - want).abs() <= 4 * 2.0**-23 * (1 + 2 / tau) * want.abs() + 2.0**-126).all()


@pytest.mark.parametrize("dim", [3, 768])
def test_closed_forms_stay_finite_at_large_kappa_and_small_tau(dim):
    m = VonMisesFisher(dim, 1e4)
    tau = 1e-3
    # log Z, A_p, L_inf and the KL of the search from the data: log-space Bessel functions.
    assert math.isfinite(m.log_partition(1e4)) and 0.9 < m.mean_resultant_length() < 1.0
    assert math.isfinite(m.limit_risk(tau)) and m.kl_softmax_vs_data(tau) > 0
    if dim == 3:
        # S^2: log Z(b) = log(sinh b / b), so L_inf = -beta A(kappa) + beta - log(2 beta) + log1p(-e^{-2 beta})
        beta, kap = 1.0 / tau, 1e4
        a_kappa = 1.0 / math.tanh(kap) - 1.0 / kap
        # (two terms of size 1000 cancel to -7.5: 1e-12 relative to them is 1e-9 absolute)
        assert m.limit_risk(tau) == pytest.approx(-beta * a_kappa + beta - math.log(2 * beta), abs=1e-12 * beta)
        # The normalised moments are finite although mu = E W = sinh(1000)/1000 is not.
        mom = m.normalised_weight_moments(tau)
        assert all(math.isfinite(v) for v in mom.values())
        # E V^2 = Z(2 beta)/Z(beta)^2 -> beta for large beta on S^2 (1 + 1/(2 beta) corrections):
        assert mom["v2"] + 1 == pytest.approx(beta * (1 - math.exp(-4 * beta)) / (1 - math.exp(-2 * beta)) ** 2,
                                              rel=1e-9)
        c1, c2 = m.bias_coefficients(tau)
        assert math.isfinite(c1) and math.isfinite(c2)
        with pytest.raises(OverflowError, match=r"mu = E W = Z\(1/tau\) = exp\(992"):
            m.weight_moments(tau)
    else:
        # dim 768: E V^3 = Z(3 beta)/Z(beta)^3 truly exceeds float64 at tau = 1e-3.
        with pytest.raises(OverflowError, match=r"E\[\(W/mu\)\^3\] = exp\(.*\) overflows float64 at tau=0.001"):
            m.normalised_weight_moments(tau)
    # The exact quadrature cannot resolve e^{kappa s} at kappa = 1e4 with 256 nodes: it says so.
    with pytest.raises(ValueError, match="does not resolve the vMF model"):
        m.exact_bias(16, tau)


def test_exact_bias_at_small_tau_is_finite_and_agrees_with_enumeration_and_monte_carlo(one_thread):
    # Finite model (exact enumeration available) at tau = 1e-3, where e^{beta s} overflows.
    fm = FiniteModel.random(4, 3, seed=1)
    for tau in (1e-3, 1e-2):
        want = fm.enumerate_centred_risk(3, tau) - fm.limit_risk(tau)
        assert fm.exact_bias(3, tau) == pytest.approx(want, rel=1e-9, abs=1e-9)
    # vMF on S^2 at tau = 1e-3 (beta = 1000, mu = e^992.4): finite, below Jensen's u1/k, and
    # inside a 99.9% Monte Carlo interval (control variates; the loss itself is computed stably).
    m = VonMisesFisher(3, 4.0)
    k = 4096
    b = exact_bias(m, [k], 1e-3)[0]
    assert math.isfinite(b) and b <= m.normalised_weight_moments(1e-3)["u1"] / k
    lo, hi = monte_carlo_bias(m, k, 1e-3, 400, device="cpu", seed=0, level=0.999, batch_size=100).get("cv").ci
    assert lo <= b <= hi


# ---------------------------------------------------------------------------------------------
# 3. Determinism.


@pytest.mark.slow
def test_same_seed_gives_identical_tables_and_ledger_records_in_three_chapters():
    runs = []
    for _ in range(2):
        runs.append((
            c1_rate.monte_carlo.uncached(c1_rate.RateSetup(tau=0.5), VonMisesFisher(3, 4.0), [4, 16, 64], 300, "cpu", 7,
                                         batch_size=128),
            c2_search.retrieval.uncached(c2_search.SearchSetup(tau=0.5, distortion=1.5), VonMisesFisher(3, 4.0),
                                         [4, 16], 200, "cpu", 7),
            c3_temperature.kl_sweep.uncached(c3_temperature.TemperatureSetup(), [0.5, 2.0], 16, 32, "cpu", 7),
        ))
    for first, second in zip(*runs):
        pd.testing.assert_frame_equal(first, second, check_exact=True)
    # The ledger records computed from those tables are identical too.
    recs = []
    for mc, _, _ in runs:
        led = Ledger("determinism", "smoke", "cpu", 7)
        c1_rate.ledger_monte_carlo(led, c1_rate.RateSetup(tau=0.5, k_min_slope=4), VonMisesFisher(3, 4.0), mc)
        recs.append([(r.id, r.measured, r.ci_low, r.ci_high, r.passed) for r in led.records])
    assert recs[0] == recs[1] and len(recs[0]) >= 2


def test_different_seeds_give_different_draws_but_the_same_verdicts():
    # vMF, k = 16, tau = 0.5: exact bias by quadrature; 99.9% intervals (a miss would be a bug).
    m = VonMisesFisher(3, 4.0)
    exact = exact_bias(m, [16], 0.5)[0]
    means, verdicts = [], []
    for seed in range(4):
        r = monte_carlo_bias(m, 16, 0.5, 1500, device="cpu", seed=seed, level=0.999)
        means.append(r["cv"].mean)
        lo, hi = r["cv"].ci
        verdicts.append(lo <= exact <= hi)
    assert len(set(means)) == 4  # different draws
    assert verdicts == [True] * 4  # the same verdict
    fm = FiniteModel.random(3, 2, seed=2)
    exact_search = fm.search_cross_entropy(8, 0.5, method="laplace").value
    draws = [fm.search_cross_entropy(8, 0.5, method="monte_carlo", n_queries=4000, seed=s) for s in (0, 1)]
    assert draws[0].value != draws[1].value
    width = [d.ci_high - d.ci_low for d in draws]
    assert all(abs(d.value - exact_search) <= 1.7 * w for d, w in zip(draws, width))  # 99.9% = 1.68 x 95%


# ---------------------------------------------------------------------------------------------
# 4. The pipeline's failure modes.


@pytest.mark.slow
def test_a_failing_cell_fails_the_whole_build_naming_the_chapter_and_the_cell(project):
    env = {**os.environ, "INFONCE_BOOK_ROOT": str(project)}
    proc = subprocess.run(CLI + ["build", "--profile", "smoke", "--device", "cpu"], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "chapter bad failed in cell" in proc.stderr and "RuntimeError: boom in the third cell" in proc.stderr
    assert not (project / "_build" / "html").exists()  # no book from a failed run


SLOW_CHAPTER = HEADER + "\n# A slow chapter\n" + PARAMETERS + """
```{code-cell} ipython3
import os, pathlib, time
from infonce_book.experiment.ledger import Ledger
root = pathlib.Path(os.environ["INFONCE_BOOK_ROOT"])
Ledger("slow", profile, device, seed).record(claim="C0", id="seed", quantity="seed", predicted=seed,
                                             measured=seed, ci_low=seed, ci_high=seed, params={})
(root / "started").write_text(str(os.getpid()))
while (root / "block").exists():
    time.sleep(0.05)
print("finished with seed", seed)
```
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("sig, previous", [(signal.SIGTERM, True), (signal.SIGKILL, False)],
                         ids=["SIGTERM-after-a-good-run", "SIGKILL-first-run"])
def test_an_interrupted_run_leaves_no_half_result_and_the_next_run_recovers(tmp_path, sig, previous):
    root = tmp_path
    (root / "book").mkdir()
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("X = 1\n")
    (root / "book" / "intro.md").write_text("# Intro\n")
    (root / "book" / "slow.md").write_text(SLOW_CHAPTER)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/slow\n")
    env = {**os.environ, "INFONCE_BOOK_ROOT": str(root)}
    env.pop("INFONCE_BOOK_LEDGER_DIR", None)
    build = root / "_build"
    run = lambda seed: CLI + ["run", "slow", "--profile", "smoke", "--device", "cpu", "--seed", str(seed)]  # noqa: E731
    outputs = [build / "notebooks" / "slow.ipynb", build / "notebooks" / "slow.run.json",
               build / "ledger" / "slow.json"]
    if previous:  # a first, successful run (seed 0), whose result must survive
        assert subprocess.run(run(0), env=env, capture_output=True, text=True).returncode == 0
        (root / "started").unlink()
    before = [p.read_bytes() if p.exists() else None for p in outputs]
    # A run with seed 1, stopped by the signal while its notebook executes (after its ledger
    # record was written to the run's temporary ledger).
    (root / "block").write_text("")
    proc = subprocess.Popen(run(1), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (root / "started").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the chapter did not start"
        time.sleep(0.05)
    kernel_pid = int((root / "started").read_text())
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    try:
        if sig == signal.SIGTERM:
            assert proc.returncode == 130 and "interrupted" in stderr, stderr
        else:
            assert proc.returncode == -signal.SIGKILL
        # The kernel goes too (shut down by the pipeline, or by its parent poller after a SIGKILL).
        deadline = time.monotonic() + 20
        while _alive(kernel_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(kernel_pid), "the chapter's kernel outlived the interrupted run"
    finally:
        if _alive(kernel_pid):
            os.kill(kernel_pid, signal.SIGKILL)
    # Nothing of the interrupted run reached the build folder: the earlier result (or nothing)
    # is intact; no failed notebook, no temporary file, no half-written ledger.
    assert [p.read_bytes() if p.exists() else None for p in outputs] == before
    leftovers = [p.name for p in build.rglob("*") if p.is_file() and (p.name.startswith(".") or "failed" in p.name)]
    assert leftovers == []
    # The next run recovers: it executes seed 1 to the end, then skips it when nothing changed.
    (root / "block").unlink()
    again = subprocess.run(run(1), env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert json.loads(outputs[2].read_text())[0]["measured"] == 1.0
    assert "finished with seed 1" in outputs[0].read_text()
    assert pipeline.run_chapter("slow", profile="smoke", device="cpu", seed=1, root=root,
                                log=lambda m: None).status == "skipped"


def test_a_changed_source_file_invalidates_every_chapter_and_only_python_sources_count(project):
    # Every chapter imports the package, so the run key hashes all of src/ (name and content; the
    # experiment cache's key hashes the package with the same function).
    key = source_hash(project / "src")
    (project / "src" / "pkg" / "new.py").write_text("Y = 1\n")  # a new module
    assert source_hash(project / "src") != key
    key = source_hash(project / "src")
    (project / "src" / "pkg" / "new.py").rename(project / "src" / "pkg" / "renamed.py")  # same content
    assert source_hash(project / "src") != key
    key = source_hash(project / "src")
    (project / "src" / "pkg" / "notes.txt").write_text("not code")
    assert source_hash(project / "src") == key


def test_a_missing_jupyter_book_is_a_clear_error_not_a_crash(tmp_path, monkeypatch, capsys):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    (tmp_path / "_config.yml").write_text("title: A book\n")
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)  # jupyter-book is found nowhere
    with pytest.raises(RuntimeError, match="jupyter-book was not found"):
        pipeline.build(root=tmp_path, device="cpu", log=lambda m: None)
    from infonce_book.pipeline.cli import main

    monkeypatch.setenv("INFONCE_BOOK_ROOT", str(tmp_path))
    assert main(["build", "--device", "cpu"]) == 1
    assert "jupyter-book was not found" in capsys.readouterr().err


def test_a_corrupt_or_truncated_cache_entry_is_recomputed_never_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_CACHE_DIR", str(tmp_path / "cache"))
    calls = []

    @cached
    def table(x):
        calls.append(x)
        return pd.DataFrame({"x": [x], "call": [len(calls)]})

    first = table(x=3)
    (entry,) = (tmp_path / "cache").glob("*.table-*.pkl")
    assert table(x=3).equals(first) and len(calls) == 1  # served from the cache
    for damage in (b"not a pickle", entry.read_bytes()[:20]):  # garbage; a write cut short
        entry.write_bytes(damage)
        again = table(x=3)
        assert list(again["x"]) == [3] and again["call"].iloc[0] == len(calls)
    assert len(calls) == 3
    assert table(x=3)["call"].iloc[0] == 3 and len(calls) == 3  # the rewritten entry is valid


@pytest.mark.slow
def test_missing_chromium_and_missing_gpu_are_clear_skips_not_failures(tmp_path):
    # (An empty build folder stands in for the smoke book: the skip comes before it is needed.)
    # Without CI=true: under CI a skipped browser test fails the run on purpose (tests/conftest.py).
    env = {**{k: v for k, v in os.environ.items() if k != "CI"},
           "INFONCE_BOOK_CHROMIUM": str(tmp_path / "no-such-chromium"),
           "INFONCE_BOOK_TEST_REUSE_BUILD": str(tmp_path / "no-build")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           str(ROOT / "tests" / "pipeline" / "test_browser.py"),
                           str(ROOT / "tests" / "utils" / "test_device.py")],
                          env=env, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "no chromium executable found" in proc.stdout and "make browser-deps" in proc.stdout
    if not HAS_CUDA:
        assert "no CUDA GPU on this machine" in proc.stdout
    assert "failed" not in proc.stdout and "error" not in proc.stdout.lower()
