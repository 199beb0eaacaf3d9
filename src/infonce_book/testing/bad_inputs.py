"""The package's input-validation contract, as data (book: "Input validation and failure modes").

:func:`bad_inputs` lists, for every validated public input (functions, classes and the
``infonce-book`` command line), one call that violates it, the error it must raise, and the words
its message must contain besides the argument's name (the offending value, or the accepted
range). ``tests/testing/test_robustness.py`` runs every case and checks the error type and the
message; the book's page ``book/robustness.md`` renders the same list as a table in a code cell
(:func:`markdown_table`), so the table and the tests cannot drift apart: a row exists only if a
test exercises it. The list is written in sections (one function each, by subpackage), which
:func:`bad_inputs` concatenates in the table's order.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from .. import losses, models
from ..datasets import digits
from ..experiment import ledger, profiles
from ..experiment import setup as chapter_setup
from ..learning import embeddings, rademacher, training
from ..pipeline import run as pipeline
from ..pipeline.cli import main
from ..theory import bounds, estimators, exact, pacbayes, search, stats, symbolic
from ..utils import device

__all__ = ["EXIT_2", "BadInput", "bad_inputs", "markdown_table", "run_cli"]

EXIT_2 = "exit 2"  # the error of a command-line case: exit status 2, a message on stderr


@dataclass(frozen=True)
class BadInput:
    """One documented bad input.

    ``function``: where (``losses.info_nce``, or ``infonce-book run`` for the CLI); ``argument``:
    the input's name, which the message must contain; ``accepted``: the accepted range, in
    words; ``given``: the bad value this case passes; ``error``: the exception class (or
    :data:`EXIT_2`); ``call``: a zero-argument callable that makes the bad call (for a CLI case,
    the argument list); ``message``: further fragments the message must contain; ``needs_no_gpu``:
    the case only applies on a machine without a CUDA GPU.
    """

    function: str
    argument: str
    accepted: str
    given: str
    error: type | str
    call: Callable | tuple
    message: tuple = field(default_factory=tuple)
    needs_no_gpu: bool = False

    @property
    def id(self) -> str:
        return f"{self.function}:{self.argument}={self.given}"

    @property
    def error_name(self) -> str:
        return self.error if isinstance(self.error, str) else self.error.__name__


def run_cli(argv) -> tuple[int, str]:
    """Run ``infonce-book argv`` in this process: ``(exit status, stderr)`` (argparse's own
    errors exit through SystemExit; they are caught here)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, err.getvalue()


# ---- the table: names its rows use, the valid inputs they spoil, and its sections in order

f64 = torch.float64
nan, inf = float("nan"), float("inf")
tau_range = "finite, > 0"
B = BadInput  # the table's rows, short
L = losses


def unit(*shape, seed=0, dtype=f64):
    """Random unit rows of the given shape (last dimension: d), from a seeded generator."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=f64)
    return (x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)).to(dtype)


def with_nan(t, index):
    """A copy of ``t`` with a NaN at ``index``."""
    t = t.clone()
    t[index] = nan
    return t


@dataclass(frozen=True)
class _Valid:
    """The valid inputs that the cases spoil, built afresh by each call of :func:`bad_inputs`:
    unit anchors ``a`` (2, 3), positives ``p`` (2, 3) and negatives ``n`` (2, 4, 3); similarities
    ``sp`` (2,) and ``sn`` (2, 3); a vMF model ``vmf`` (dim 3, kappa 4) and a finite model ``fin``
    (two points, kernel ``half``, embeddings ``eye``)."""

    a: torch.Tensor
    p: torch.Tensor
    n: torch.Tensor
    sp: torch.Tensor
    sn: torch.Tensor
    vmf: models.VonMisesFisher
    eye: list
    half: list
    fin: models.FiniteModel


def _valid_inputs() -> _Valid:
    eye = [[1.0, 0.0], [0.0, 1.0]]
    half = [[0.5, 0.5], [0.5, 0.5]]
    return _Valid(a=unit(2, 3), p=unit(2, 3, seed=1), n=unit(2, 4, 3, seed=2),
                  sp=torch.tensor([0.5, -0.2], dtype=f64),
                  sn=torch.tensor([[0.1, 0.3, -0.4], [0.0, 0.9, -1.0]], dtype=f64),
                  vmf=models.VonMisesFisher(3, 4.0), eye=eye, half=half, fin=models.FiniteModel([0.5, 0.5], half, eye))


def _loss_info_nce_cases(v: _Valid) -> list[BadInput]:
    """``losses.info_nce``: the temperature, the inputs' types, norms and shapes, the options."""
    a, p, n = v.a, v.p, v.n
    return [
        B("losses.info_nce", "tau", tau_range, "0.0", ValueError, lambda: L.info_nce(a, p, n, 0.0), ("(0, inf)",)),
        B("losses.info_nce", "tau", tau_range, "-1.0", ValueError, lambda: L.info_nce(a, p, n, -1.0), ("-1.0",)),
        B("losses.info_nce", "tau", tau_range, "nan", ValueError, lambda: L.info_nce(a, p, n, nan), ("nan",)),
        B("losses.info_nce", "tau", tau_range, "inf", ValueError, lambda: L.info_nce(a, p, n, inf), ("inf",)),
        B("losses.info_nce", "tau", "a real number (not a string)", "'0.5'", TypeError,
          lambda: L.info_nce(a, p, n, "0.5"), ("'0.5'",)),
        B("losses.info_nce", "tau", "a floating-point tensor (learnable)", "torch.tensor(1)", TypeError,
          lambda: L.info_nce(a, p, n, torch.tensor(1)), ("floating-point",)),
        B("losses.info_nce", "tau", "one element", "a (2,) tensor", ValueError,
          lambda: L.info_nce(a, p, n, torch.tensor([0.5, 0.5])), ("scalar",)),
        B("losses.info_nce", "anchor", "a floating-point tensor", "int64 tensor", TypeError,
          lambda: L.info_nce(a.long(), p, n, 0.5), ("floating-point", "int64")),
        B("losses.info_nce", "anchor", "a torch.Tensor", "a NumPy array", TypeError,
          lambda: L.info_nce(a.numpy(), p, n, 0.5), ("torch.Tensor",)),
        B("losses.info_nce", "anchor", "rows of norm 1 (the sphere)", "2 x unit rows", ValueError,
          lambda: L.info_nce(2 * a, p, n, 0.5), ("unit-norm",)),
        B("losses.info_nce", "negatives", "rows of norm 1 (the sphere)", "1.1 x unit rows", ValueError,
          lambda: L.info_nce(a, p, 1.1 * n, 0.5), ("unit-norm", "0.01")),
        B("losses.info_nce", "negatives", "finite entries", "a NaN entry", ValueError,
          lambda: L.info_nce(a, p, with_nan(n, (1, 2, 0)), 0.5, require_unit_norm=False), ("NaN",)),
        B("losses.info_nce", "positive", "the anchor's shape (B, d)", "shape (2, 4)", ValueError,
          lambda: L.info_nce(a, unit(2, 4), n, 0.5), ("(2, 3)", "(2, 4)")),
        B("losses.info_nce", "negatives", "shape (B, k, d) or (k, d)", "rank 4", ValueError,
          lambda: L.info_nce(a, p, n[None], 0.5), ("(1, 2, 4, 3)",)),
        B("losses.info_nce", "negatives", "the anchor's d", "d = 5", ValueError,
          lambda: L.info_nce(a, p, unit(4, 5), 0.5), ("d = 3",)),
        B("losses.info_nce", "k (number of negatives)", "an integer >= 1 (decoupled; the standard loss is 0 at k = 0)",
          "k = 0, decoupled", ValueError, lambda: L.info_nce(a, p, n[:, :0], 0.5, variant="decoupled"), (">= 1",)),
        B("losses.info_nce", "anchor", "B >= 1 rows (no empty batch)", "B = 0", ValueError,
          lambda: L.info_nce(a[:0], p[:0], n[:0], 0.5), ("empty batch",)),
        B("losses.info_nce", "variant", "'standard' or 'decoupled'", "'symmetric'", ValueError,
          lambda: L.info_nce(a, p, n, 0.5, variant="symmetric"), ("'symmetric'", "decoupled")),
        B("losses.info_nce", "reduction", "'mean', 'sum' or 'none'", "'max'", ValueError,
          lambda: L.info_nce(a, p, n, 0.5, reduction="max"), ("'max'",)),
        B("losses.info_nce", "chunk_size", "None or an integer >= 1", "0", ValueError,
          lambda: L.info_nce(a, p, n, 0.5, chunk_size=0), (">= 1",)),
        B("losses.info_nce", "accumulate", "None, torch.float32 or torch.float64", "torch.float16", ValueError,
          lambda: L.info_nce(a, p, n, 0.5, accumulate=torch.float16), ("float16",)),
        B("losses.info_nce", "require_unit_norm", "True or False", "'no'", TypeError,
          lambda: L.info_nce(a, p, n, 0.5, require_unit_norm="no"), ("'no'",)),
    ]


def _loss_other_cases(v: _Valid) -> list[BadInput]:
    """The other losses: from similarities, streamed, in-batch, NT-Xent and the distributed gather."""
    a, p, sp, sn = v.a, v.p, v.sp, v.sn
    return [
        B("losses.info_nce_from_similarities", "s_pos", "a floating-point tensor", "int64 tensor", TypeError,
          lambda: L.info_nce_from_similarities(sp.long(), sn, 0.5), ("floating-point",)),
        B("losses.info_nce_from_similarities", "s_pos", "shape (B,)", "a 0-d tensor", ValueError,
          lambda: L.info_nce_from_similarities(sp[0], sn, 0.5), ("(B,)",)),
        B("losses.info_nce_from_similarities", "s_neg", "shape (B, k), B = len(s_pos)", "B = 3", ValueError,
          lambda: L.info_nce_from_similarities(sp, torch.zeros(3, 3, dtype=f64), 0.5), ("(2,)", "(3, 3)")),
        B("losses.info_nce_from_similarities", "s_neg", "finite entries", "an inf entry", ValueError,
          lambda: L.info_nce_from_similarities(sp, sn.clone().fill_(inf), 0.5), ("NaN or infinite",)),
        B("losses.info_nce_from_similarities", "tau", tau_range, "0.0", ValueError,
          lambda: L.info_nce_from_similarities(sp, sn, 0.0), ("(0, inf)",)),
        B("losses.info_nce_streaming", "s_neg_chunks", "an iterable of (B, m) tensors", "3", TypeError,
          lambda: L.info_nce_streaming(sp, 3, 0.5), ("int",)),
        B("losses.info_nce_streaming", "k (number of negatives)", "at least one negative in all chunks (decoupled)",
          "[], decoupled", ValueError, lambda: L.info_nce_streaming(sp, [], 0.5, variant="decoupled"), (">= 1",)),
        B("losses.info_nce_streaming", "s_neg chunk", "shape (B, m)", "B = 3", ValueError,
          lambda: L.info_nce_streaming(sp, [torch.zeros(3, 2, dtype=f64)], 0.5), ("B = 2",)),
        B("losses.info_nce_from_similarities", "tau", "1/tau within the accumulation dtype", "1e-40 (float32)",
          OverflowError, lambda: L.info_nce_from_similarities(sp.float(), sn.float(), 1e-40),
          ("1e-40", "float32", "accumulate=torch.float64")),
        B("losses.info_nce_in_batch", "z2", "the shape of z1, (B, d)", "shape (2, 4)", ValueError,
          lambda: L.info_nce_in_batch(a, unit(2, 4), 0.5), ("(2, 3)", "(2, 4)")),
        B("losses.info_nce_in_batch", "B", "at least 2 pairs (decoupled; the standard loss is 0 at B = 1)",
          "B = 1, decoupled", ValueError, lambda: L.info_nce_in_batch(a[:1], p[:1], 0.5, variant="decoupled"),
          ("at least 2 pairs",)),
        B("losses.info_nce_in_batch", "z1", "rows of norm 1 (the sphere)", "2 x unit rows", ValueError,
          lambda: L.info_nce_in_batch(2 * a, p, 0.5), ("unit-norm",)),
        B("losses.info_nce_in_batch", "symmetric", "True or False", "1", TypeError,
          lambda: L.info_nce_in_batch(a, p, 0.5, symmetric=1), ("symmetric=1",)),
        B("losses.nt_xent", "B", "at least 2 pairs (decoupled; the standard loss is 0 at B = 1)",
          "B = 1, decoupled", ValueError, lambda: L.nt_xent(a[:1], p[:1], 0.5, variant="decoupled"),
          ("at least 2 pairs",)),
        B("losses.nt_xent", "z1", "a floating-point tensor", "int64 tensor", TypeError,
          lambda: L.nt_xent(a.long(), p, 0.5), ("floating-point", "int64")),
        B("losses.nt_xent", "gather", "an initialised torch.distributed process group", "no process group",
          RuntimeError, lambda: L.nt_xent(a, p, 0.5, gather=True), ("init_process_group",)),
        B("losses.gather_with_grad", "group", "an initialised torch.distributed process group", "none initialised",
          RuntimeError, lambda: L.gather_with_grad(a), ("init_process_group",)),
    ]


def _model_vmf_cases(v: _Valid) -> list[BadInput]:
    """The von Mises-Fisher model, the model registry and the vMF functions."""
    a, vmf = v.a, v.vmf
    return [
        B("models.VonMisesFisher", "dim", "an integer >= 2", "1", ValueError, lambda: models.VonMisesFisher(1, 1.0),
          (">= 2", "dim=1")),
        B("models.VonMisesFisher", "dim", "an integer >= 2", "2.5", TypeError, lambda: models.VonMisesFisher(2.5, 1.0),
          ("2.5",)),
        B("models.VonMisesFisher", "kappa", "[0, inf), finite", "-1.0", ValueError,
          lambda: models.VonMisesFisher(3, -1.0), ("-1.0",)),
        B("models.VonMisesFisher", "kappa", "[0, inf), finite", "nan", ValueError,
          lambda: models.VonMisesFisher(3, nan), ("nan",)),
        B("models.VonMisesFisher.limit_risk", "tau", tau_range, "0", ValueError, lambda: vmf.limit_risk(0),
          ("(0, inf)",)),
        B("models.VonMisesFisher.exact_bias", "k (number of negatives)", "an integer >= 1", "0", ValueError,
          lambda: vmf.exact_bias(0, 0.5), ("k=0",)),
        B("models.VonMisesFisher.exact_bias", "k (number of negatives)", "an integer >= 1", "2.5", TypeError,
          lambda: vmf.exact_bias(2.5, 0.5), ("2.5",)),
        B("models.VonMisesFisher.exact_bias", "kappa", "what 256 quadrature nodes resolve", "dim 768, kappa 1e4",
          ValueError, lambda: models.VonMisesFisher(768, 1e4).exact_bias(16, 1.0), ("does not resolve", "tau=1")),
        B("models.VonMisesFisher.weight_moments", "tau", "mu = Z(1/tau) within float64", "1e-3 (dim 3)",
          OverflowError, lambda: vmf.weight_moments(1e-3), ("mu", "overflows", "tau=0.001")),
        B("models.VonMisesFisher.normalised_weight_moments", "tau", "E (W/mu)^4 within float64",
          "1e-3 (dim 768)", OverflowError, lambda: models.VonMisesFisher(768, 4.0).normalised_weight_moments(1e-3),
          ("E[(W/mu)^", "overflows")),
        B("models.VonMisesFisher.bias_coefficients", "order", "1, 2, 3 or 4", "5", ValueError,
          lambda: vmf.bias_coefficients(0.5, order=5), ("order=5",)),
        B("models.VonMisesFisher.bias_coefficients", "variant", "'standard' or 'decoupled'", "'x'", ValueError,
          lambda: vmf.bias_coefficients(0.5, variant="x"), ("'x'",)),
        B("models.VonMisesFisher.sample_positive", "anchors", "unit rows (the kernel is vMF(x, kappa))",
          "2 x unit rows", ValueError, lambda: vmf.sample_positive(2 * unit(2, 3)), ("unit-norm",)),
        B("models.VonMisesFisher.sample_positive", "anchors", "a floating-point tensor", "int64 tensor", TypeError,
          lambda: vmf.sample_positive(torch.ones(2, 3, dtype=torch.long)), ("floating-point",)),
        B("models.VonMisesFisher.sample_data", "n", "an integer >= 1", "0", ValueError,
          lambda: vmf.sample_data(0), ("n=0",)),
        B("models.VonMisesFisher.sample_tuples", "k", "an integer >= 1", "0", ValueError,
          lambda: vmf.sample_tuples(2, 0), ("k=0",)),
        B("models.from_params", "params", "a dict naming a known model", "{'model': 'nope'}", ValueError,
          lambda: models.from_params({"model": "nope"}), ("'nope'", "vmf")),
        B("models.VonMisesFisher.search_cross_entropy", "n_queries", "an integer >= 2", "1", ValueError,
          lambda: vmf.search_cross_entropy(4, 0.5, method="monte_carlo", n_queries=1), ("n_queries=1",)),
        B("models.VonMisesFisher.search_cross_entropy", "method", "'laplace' or 'monte_carlo'", "'x'", ValueError,
          lambda: vmf.search_cross_entropy(4, 0.5, method="x"), ("'x'",)),
        B("models.VonMisesFisher.log_density_ratio_of_cosine", "s", "cosines in [-1, 1]", "1.5", ValueError,
          lambda: vmf.log_density_ratio_of_cosine(1.5), ("[-1, 1]", "1.5")),
        B("models.VonMisesFisher.log_density_ratio", "y", "shape (n, 3) or (n, k, 3)", "shape (2, 4)", ValueError,
          lambda: vmf.log_density_ratio(a, torch.zeros(2, 4, dtype=f64)), ("(n, 3)",)),
        B("models.log_vmf_partition", "b", "[0, inf), finite", "-1.0", ValueError,
          lambda: models.log_vmf_partition(3, -1.0), ("-1",)),
        B("models.mean_resultant_length", "kappa", "[0, inf), finite", "-1.0", ValueError,
          lambda: models.mean_resultant_length(3, -1.0), ("-1",)),
    ]


def _model_other_cases(v: _Valid) -> list[BadInput]:
    """The finite, Gaussian and Student-t models."""
    fin, eye, half = v.fin, v.eye, v.half
    return [
        B("models.FiniteModel", "pi", "entries > 0 summing to 1", "(0.45, 0.45)", ValueError,
          lambda: models.FiniteModel([0.45, 0.45], half, eye), ("probability", "0.9")),
        B("models.FiniteModel", "pi", "finite entries", "a NaN entry", ValueError,
          lambda: models.FiniteModel([nan, 0.5], half, eye), ("NaN",)),
        B("models.FiniteModel", "kernel", "row-stochastic (rows sum to 1)", "a row summing to 0.9", ValueError,
          lambda: models.FiniteModel([0.5, 0.5], [[0.5, 0.4], [0.5, 0.5]], eye), ("row-stochastic", "0.9")),
        B("models.FiniteModel", "kernel", "entries > 0 (M equivalent to pi)", "a negative entry", ValueError,
          lambda: models.FiniteModel([0.5, 0.5], [[1.5, -0.5], [0.5, 0.5]], eye), ("> 0",)),
        B("models.FiniteModel", "kernel", "shape (N, N)", "(3, 3) for N = 2", ValueError,
          lambda: models.FiniteModel([0.5, 0.5], np.full((3, 3), 1 / 3), eye), ("(2, 2)",)),
        B("models.FiniteModel", "embeddings", "rows of norm 1", "a row of norm 2", ValueError,
          lambda: models.FiniteModel([0.5, 0.5], half, [[2.0, 0.0], [0.0, 1.0]]), ("unit-norm",)),
        B("models.FiniteModel.search_cross_entropy", "k (database size)", "an integer >= 1", "0", ValueError,
          lambda: fin.search_cross_entropy(0, 0.5), ("k=0",)),
        B("models.FiniteModel.weight_moments", "tau", "mu = E W within float64", "1e-3", OverflowError,
          lambda: fin.weight_moments(1e-3), ("mu", "tau=0.001")),
        B("models.GaussianModel", "rho", "(-1, 1)", "1.0", ValueError, lambda: models.GaussianModel(2, 1.0),
          ("rho=1.0",)),
        B("models.StudentTModel", "nu", "(1, inf)", "1.0", ValueError, lambda: models.StudentTModel(2, 1.0, 0.5),
          ("nu=1.0",)),
    ]


def _theory_exact_bounds_cases(v: _Valid) -> list[BadInput]:
    """``theory``: the exact references and the bounds."""
    sp, sn, vmf = v.sp, v.sn, v.vmf
    return [
        B("theory.exact.exact_bias", "model", "a VonMisesFisher or a FiniteModel", "None", TypeError,
          lambda: exact.exact_bias(None, [4], 0.5), ("NoneType",)),
        B("theory.exact.exact_bias", "ks", "at least one integer >= 1", "[]", ValueError,
          lambda: exact.exact_bias(vmf, [], 0.5), ("empty",)),
        B("theory.exact.ein", "z", "[0, inf)", "-1.0", ValueError, lambda: exact.ein(-1.0), (">= 0",)),
        B("theory.exact.snis_bias", "p", "a probability vector", "sum 1.1", ValueError,
          lambda: exact.snis_bias([1.0, 1.0], [0.0, 1.0], [0.5, 0.6], [2]), ("1.1",)),
        B("theory.exact.snis_bias", "m, f and p", "the same length", "lengths 2, 3, 2", ValueError,
          lambda: exact.snis_bias([1.0, 1.0], [0.0, 1.0, 2.0], [0.5, 0.5], [2]), ("(3,)",)),
        # ---- bounds
        B("theory.bounds.bias_bounds", "a", "(0, 1]", "0.0", ValueError,
          lambda: bounds.bias_bounds(4, u1=1.0, u2=1.0, v2=1.0, a=0.0), ("a=0.0",)),
        B("theory.bounds.bias_bounds", "u1", "[0, inf), finite", "nan", ValueError,
          lambda: bounds.bias_bounds(4, u1=nan, u2=1.0, v2=1.0, a=0.5), ("nan",)),
        B("theory.bounds.bias_bounds", "u2", ">= u1^2 (moments of one law)", "u1 = 2, u2 = 1", ValueError,
          lambda: bounds.bias_bounds(4, u1=2.0, u2=1.0, v2=1.0, a=0.5), ("u1^2",)),
        B("theory.bounds.bias_bounds", "k", "integers >= 1", "0", ValueError,
          lambda: bounds.bias_bounds(0, u1=1.0, u2=1.0, v2=1.0, a=0.5), ("k=0",)),
        B("theory.bounds.lipschitz_log_bound", "sigma", "[0, inf), finite", "-1.0", ValueError,
          lambda: bounds.lipschitz_log_bound(4, tau=0.5, sigma=-1.0, mean_w_pos=1.0), ("-1.0",)),
        B("theory.bounds.lipschitz_log_bound", "tau", "e^(1/tau) within float64", "1e-3", OverflowError,
          lambda: bounds.lipschitz_log_bound(4, tau=1e-3, sigma=1.0, mean_w_pos=1.0), ("overflows", "tau=0.001")),
        B("theory.bounds.uniform_bias_constant", "tau", "C(tau) within float64 (tau > 0.0057)", "1e-3", OverflowError,
          lambda: bounds.uniform_bias_constant(1e-3), ("overflows", "tau=0.001")),
        B("theory.bounds.kl_softmax_bound", "tau", tau_range, "0", ValueError, lambda: bounds.kl_softmax_bound(0),
          ("(0, inf)",)),
        B("theory.bounds.continuity_bound", "kind", "'average', 'max' or 'dv'", "'mean'", ValueError,
          lambda: bounds.continuity_bound(sp, sn, sp, sn, 0.5, kind="mean"), ("'mean'",)),
        B("theory.bounds.continuity_bound", "s_neg", "entries in [-1, 1]", "2.0", ValueError,
          lambda: bounds.continuity_bound(sp, sn + 1.5, sp, sn, 0.5), ("[-1, 1]",)),
        B("theory.bounds.continuity_bound", "gamma", "only with kind='dv'", "1.0 with 'average'", ValueError,
          lambda: bounds.continuity_bound(sp, sn, sp, sn, 0.5, gamma=1.0), ("kind='dv'",)),
        B("theory.bounds.continuity_bound", "tau", "the average form within float64", "1e-3", OverflowError,
          lambda: bounds.continuity_bound(sp, sn, sp, sn * 0.5, 1e-3), ("overflows", "tau=0.001", "kind='max'")),
        B("theory.bounds.loss_lipschitz_constant", "L_neg", "finite entries >= 0", "-1.0", ValueError,
          lambda: bounds.loss_lipschitz_constant([1.0], [1.0], [[-1.0]], 0.5), ("-1.0",)),
        B("theory.bounds.loss_lipschitz_constant", "L_anchor", "a real array", "['a']", TypeError,
          lambda: bounds.loss_lipschitz_constant(["a"], [1.0], [[1.0]], 0.5), ("real array",)),
        B("theory.bounds.rademacher_covering_bound", "n_params", "an integer >= 1", "0", ValueError,
          lambda: bounds.rademacher_covering_bound(1.0, 1.0, 0, 10), ("n_params=0",)),
        B("theory.bounds.loss_range", "k (number of negatives)", "an integer >= 1", "0", ValueError,
          lambda: bounds.loss_range(0, 0.5), ("k=0",)),
        B("theory.bounds.search_bias_constant", "m_min", "(0, inf)", "0.0", ValueError,
          lambda: bounds.search_bias_constant(0.5, sd_m=1.0, second_moment_m=1.0, m_min=0.0), ("m_min=0.0",)),
        B("theory.bounds.theorem1_terms", "delta", "(0, 1)", "1.0", ValueError,
          lambda: bounds.theorem1_terms(train_risk=1.0, k=4, n=10, tau=0.5, delta=1.0, rademacher=0.1),
          ("delta=1.0",)),
        B("theory.bounds.theorem1_terms", "train_risk", "a finite real number", "nan", ValueError,
          lambda: bounds.theorem1_terms(train_risk=nan, k=4, n=10, tau=0.5, delta=0.1, rademacher=0.1), ("nan",)),
        B("theory.bounds.theorem1_terms", "train_risk", "a finite real number", "'x'", TypeError,
          lambda: bounds.theorem1_terms(train_risk="x", k=4, n=10, tau=0.5, delta=0.1, rademacher=0.1), ("'x'",)),
    ]


def _theory_estimators_search_cases(v: _Valid) -> list[BadInput]:
    """``theory``: the Monte Carlo estimators, the uncertainty type and similarity search."""
    a, sp, sn, vmf, fin = v.a, v.sp, v.sn, v.vmf, v.fin
    return [
        B("theory.estimators.monte_carlo_bias", "model", "a VonMisesFisher", "a FiniteModel", TypeError,
          lambda: estimators.monte_carlo_bias(fin, 4, 0.5, 10, device="cpu"), ("FiniteModel",)),
        B("theory.estimators.monte_carlo_bias", "n_tuples", "an integer >= 2", "1", ValueError,
          lambda: estimators.monte_carlo_bias(vmf, 4, 0.5, 1, device="cpu"), ("n_tuples=1",)),
        B("theory.estimators.monte_carlo_bias", "batch_size", "an integer >= 1", "0", ValueError,
          lambda: estimators.monte_carlo_bias(vmf, 4, 0.5, 10, batch_size=0, device="cpu"), ("batch_size=0",)),
        B("theory.estimators.monte_carlo_bias", "dtype", "torch.float32 or torch.float64", "torch.int64", ValueError,
          lambda: estimators.monte_carlo_bias(vmf, 4, 0.5, 10, dtype=torch.int64, device="cpu"), ("int64",)),
        B("theory.estimators.monte_carlo_bias", "level", "(0, 1)", "1.5", ValueError,
          lambda: estimators.monte_carlo_bias(vmf, 4, 0.5, 10, level=1.5, device="cpu"), ("level=1.5",)),
        B("theory.estimators.monte_carlo_bias", "seed", "an integer >= 0", "-1", ValueError,
          lambda: estimators.monte_carlo_bias(vmf, 4, 0.5, 10, seed=-1, device="cpu"), ("seed=-1",)),
        B("theory.estimators.monte_carlo_bias", "device", "'auto', 'cpu', 'cuda' or 'cuda:N'", "'tpu'", ValueError,
          lambda: estimators.monte_carlo_bias(vmf, 4, 0.5, 10, device="tpu"), ("'tpu'",)),
        B("theory.estimators.monte_carlo_bias", "device", "'cuda' only where a CUDA GPU is present", "'cuda'",
          ValueError,
          lambda: estimators.monte_carlo_bias(vmf, 4, 0.5, 10, device="cuda"), ("no CUDA GPU",),
          needs_no_gpu=True),
        B("theory.stats.Estimate.from_samples", "x", "at least 2 finite samples", "one sample", ValueError,
          lambda: stats.Estimate.from_samples(np.array([1.0])), ("at least 2",)),
        B("theory.stats.Estimate.from_samples", "level", "(0, 1)", "2.0", ValueError,
          lambda: stats.Estimate.from_samples(np.array([1.0, 2.0]), level=2.0), ("level=2.0",)),
        # ---- similarity search
        B("theory.search.search_cross_entropy", "s_db and log_m_db", "the same shape (B, k)", "(2, 3) and (2, 2)",
          ValueError, lambda: search.search_cross_entropy(sn, sn[:, :2], 0.5), ("(2, 3)", "(2, 2)")),
        B("theory.search.softmax_search_log_kernel", "s_db", "shape (B, k), B, k >= 1", "a (3,) tensor", ValueError,
          lambda: search.softmax_search_log_kernel(sp.new_zeros(3), 0.5), ("(3,)",)),
        B("theory.search.positive_rank", "score_pos", "shape (B,), B = score_db.shape[0]", "B = 1", ValueError,
          lambda: search.positive_rank(sp[:1], sn), ("(1,)", "(2, 3)")),
        B("theory.search.empirical_kl_softmax", "queries", "rows of norm 1", "2 x unit rows", ValueError,
          lambda: search.empirical_kl_softmax(2 * a, unit(5, 3), 0.5), ("unit-norm",)),
        B("theory.search.empirical_kl_softmax", "sample", "(B, n, d) with the queries' B, or (n, d)", "B = 3",
          ValueError, lambda: search.empirical_kl_softmax(a, unit(3, 5, 3), 0.5), ("(3, 5, 3)",)),
        B("theory.search.empirical_kl_softmax_interval", "level", "(0, 1)", "2.0", ValueError,
          lambda: search.empirical_kl_softmax_interval(unit(4, 3), unit(5, 3), 0.5, level=2.0), ("level=2.0",)),
    ]


def _learning_datasets_cases(v: _Valid) -> list[BadInput]:
    """``learning`` (embeddings, training, Rademacher complexity) and ``datasets`` (real data)."""
    a, p, n, vmf = v.a, v.p, v.n, v.vmf
    return [
        B("learning.embeddings.NormalisedLinear", "dim", "an integer >= 2", "1", ValueError,
          lambda: embeddings.NormalisedLinear(1), ("dim=1",)),
        B("learning.embeddings.NormalisedLinear", "radius", "(0, 1)", "1.0", ValueError,
          lambda: embeddings.NormalisedLinear(3, 1.0), ("radius=1.0",)),
        B("learning.embeddings.loss_per_tuple", "x", "a floating-point tensor", "int64 tensor", TypeError,
          lambda: embeddings.loss_per_tuple(embeddings.NormalisedLinear(3), a.long(), p, n, 0.5), ("int64",)),
        B("learning.training.fit_temperature", "tail", "1 .. steps", "200 > steps = 10", ValueError,
          lambda: training.fit_temperature(vmf, 4, steps=10, device="cpu"), ("tail=200", "steps=10")),
        B("learning.training.fit_temperature", "lr", "(0, inf), finite", "0", ValueError,
          lambda: training.fit_temperature(vmf, 4, steps=10, tail=5, lr=0, device="cpu"), ("lr=0.0",)),
        B("learning.training.fit_temperature", "tau_init", "(0, inf), finite", "-1.0", ValueError,
          lambda: training.fit_temperature(vmf, 4, tau_init=-1.0, device="cpu"), ("tau_init=-1.0",)),
        B("learning.training.fit_linear_embedding", "n_test", "an integer >= 2", "1", ValueError,
          lambda: training.fit_linear_embedding(vmf, 0.5, n_train=4, k=2, n_test=1, device="cpu"), ("n_test=1",)),
        B("learning.training.fit", "steps", "an integer >= 1", "0", ValueError,
          lambda: training.fit(embeddings.NormalisedLinear(3), (a, p, n), 0.5, steps=0), ("steps=0",)),
        B("learning.rademacher.empirical_rademacher", "n_sigma", "an integer >= 2", "1", ValueError,
          lambda: rademacher.empirical_rademacher(embeddings.NormalisedLinear(3), (a, p, n), 1, tau=0.5),
          ("n_sigma=1",)),
        B("learning.rademacher.empirical_rademacher", "lr", "(0, inf), finite", "-1.0", ValueError,
          lambda: rademacher.empirical_rademacher(embeddings.NormalisedLinear(3), (a, p, n), 2, tau=0.5, lr=-1.0),
          ("lr=-1.0",)),
        # ---- real data
        B("datasets.digits.augment", "images", "values in [0, 1]", "2.0", ValueError,
          lambda: digits.augment(torch.full((1, 8, 8), 2.0)), ("[0, 1]",)),
        B("datasets.digits.split", "labels", "one label per image", "4 labels, 5 images", ValueError,
          lambda: digits.split(torch.rand(5, 2, 2), torch.arange(4), 2), ("(4,)",)),
        B("datasets.digits.evaluate", "n_queries", "an integer >= 2", "1", ValueError,
          lambda: digits.evaluate(embeddings.SphereMLP(64, 4, 2), torch.rand(5, 8, 8), torch.arange(5), k=2,
                                  tau=0.5, k_eval=2, n_queries=1), ("n_queries=1",)),
    ]


def _utils_experiment_pipeline_cases(v: _Valid) -> list[BadInput]:
    """Devices, profiles, chapter set-up, the pipeline's chapter lookup and the ledger."""
    return [
        B("utils.device.resolve_device", "device", "'auto', 'cpu', 'cuda' or 'cuda:N'", "'tpu'", ValueError,
          lambda: device.resolve_device("tpu"), ("'tpu'",)),
        B("utils.device.resolve_device", "device", "'cuda' only where a CUDA GPU is present", "'cuda'", ValueError,
          lambda: device.resolve_device("cuda"), ("no CUDA GPU",), needs_no_gpu=True),
        B("experiment.profiles.sizes_for", "profile", "'smoke', 'standard' or 'full'", "'huge'", ValueError,
          lambda: profiles.sizes_for({p: {} for p in profiles.PROFILES}, "huge"), ("'huge'",)),
        B("experiment.profiles.sizes_for", "table", "every profile, with the same keys", "no 'full'", ValueError,
          lambda: profiles.sizes_for({"smoke": {}, "standard": {}}, "smoke"), ("'full'",)),
        B("experiment.setup.setup_chapter", "seed", "an integer >= 0", "-1", ValueError,
          lambda: chapter_setup.setup_chapter("c1_rate", "smoke", "cpu", -1, quiet=True), ("seed=-1",)),
        B("pipeline.run.resolve_chapter", "chapter", "a jupytext chapter of _toc.yml", "'nope'", ValueError,
          lambda: pipeline.resolve_chapter("nope"), ("unknown chapter 'nope'",)),
        B("experiment.ledger.Ledger.record", "measured", "a finite number", "inf", ValueError,
          lambda: ledger.Ledger("robustness", "smoke", "cpu", 0).record(
              claim="C0", id="x", quantity="q", predicted=1.0, measured=inf, ci_low=0.0, ci_high=2.0, params={}),
          ("inf",)),
        B("experiment.ledger.Ledger.record", "ci_low", "<= ci_high", "2 > 1", ValueError,
          lambda: ledger.Ledger("robustness", "smoke", "cpu", 0).record(
              claim="C0", id="x", quantity="q", predicted=1.0, measured=1.0, ci_low=2.0, ci_high=1.0, params={}),
          ("ci_high",)),
        B("experiment.setup.log_grid", "k_max_log2", "an integer >= 0", "-1", ValueError,
          lambda: chapter_setup.log_grid(-1), ("k_max_log2=-1",)),
    ]


def _theory_later_cases(v: _Valid) -> list[BadInput]:
    """``theory`` rows added after the first table, in its order: Lipschitz and search constants,
    PAC-Bayes, statistics, symbolic expansions."""
    return [
        B("theory.bounds.embedding_lipschitz_constant", "tau", tau_range, "0.0", ValueError,
          lambda: bounds.embedding_lipschitz_constant(np.ones(2), np.ones(2), np.ones((2, 3)), 0.0), ("(0, inf)",)),
        B("theory.bounds.embedding_lipschitz_constant", "L_anchor", "finite, >= 0", "-1", ValueError,
          lambda: bounds.embedding_lipschitz_constant(-np.ones(2), np.ones(2), np.ones((2, 3)), 1.0), (">= 0",)),
        B("theory.bounds.embedding_lipschitz_constant", "L_positive", "shape (B,) with L_anchor's B",
          "shape (3,) for B = 2", ValueError,
          lambda: bounds.embedding_lipschitz_constant(np.ones(2), np.ones(3), np.ones((2, 3)), 1.0), ("(3,)",)),
        B("theory.bounds.tunable_lipschitz_constant", "gamma", "finite, > 0", "-1.0", ValueError,
          lambda: bounds.tunable_lipschitz_constant(np.ones(2), np.ones(2), np.ones((2, 3)), 1.0, gamma=-1.0),
          ("gamma=-1.0",)),
        B("theory.bounds.search_bias_constant_l2", "second_moment", ">= 1 (E_pi m^2 >= 1)", "0.5", ValueError,
          lambda: bounds.search_bias_constant_l2(1.0, second_moment=0.5), ("0.5",)),
        B("theory.bounds.kl_softmax_sharp_bound", "tau", tau_range, "-1.0", ValueError,
          lambda: bounds.kl_softmax_sharp_bound(-1.0), ("-1.0",)),
        B("theory.bounds.vector_contraction_bound", "n", "an integer >= 1", "0", ValueError,
          lambda: bounds.vector_contraction_bound(0, 4, 1.0, radius=0.5, dim_out=3), ("n=0",)),
        B("theory.pacbayes.kl_inverse_upper", "q", "[0, 1]", "1.5", ValueError,
          lambda: pacbayes.kl_inverse_upper(1.5, 0.1), ("q=1.5",)),
        B("theory.pacbayes.kl_inverse_upper", "c", "finite, >= 0", "-0.1", ValueError,
          lambda: pacbayes.kl_inverse_upper(0.5, -0.1), ("c=-0.1",)),
        B("theory.pacbayes.gaussian_kl_isotropic", "s_q", "finite, > 0", "0.0", ValueError,
          lambda: pacbayes.gaussian_kl_isotropic(np.zeros(3), np.zeros(3), 0.0, 1.0), ("s_q=0.0",)),
        B("theory.stats.equivalence_test", "margin", "finite, > 0 (declared in advance)", "-0.1", ValueError,
          lambda: stats.equivalence_test(stats.Estimate.from_samples([1.0, 2.0, 3.0]), -0.1), ("-0.1",)),
        B("theory.stats.bootstrap_mean", "n_boot", "an integer >= 100", "0", ValueError,
          lambda: stats.bootstrap_mean([1.0, 2.0, 3.0], n_boot=0), ("n_boot=0",)),
        B("theory.stats.coverage_interval", "hits", "0 .. n", "5 > n = 3", ValueError,
          lambda: stats.coverage_interval(5, 3), ("hits=5",)),
        B("theory.stats.fit_loglog_slope", "k, value and se", "1-D, the same length >= 2", "lengths 3, 2, 3",
          ValueError, lambda: stats.fit_loglog_slope([1, 2, 3], [1.0, 2.0], [1.0, 1.0, 1.0]), ("(2,)",)),
        B("theory.symbolic.bias_expansion", "order", "1, 2 or 3", "9", ValueError,
          lambda: symbolic.bias_expansion("standard", 9), ("order=9",)),
    ]


def _cli_cases(v: _Valid) -> list[BadInput]:
    """The command line (exit status 2, message on stderr)."""
    return [
        B("infonce-book run", "chapter", "a chapter of `infonce-book chapters`", "nope", EXIT_2,
          ("run", "nope", "--device", "cpu"), ("unknown chapter 'nope'",)),
        B("infonce-book run", "--profile", "smoke, standard or full", "huge", EXIT_2,
          ("run", "c1_rate", "--profile", "huge"), ("'huge'",)),
        B("infonce-book build", "--profile", "smoke, standard or full", "huge", EXIT_2,
          ("build", "--profile", "huge"), ("'huge'",)),
        B("infonce-book run", "--device", "auto, cpu, cuda or cuda:N", "tpu", EXIT_2,
          ("run", "c1_rate", "--device", "tpu"), ("'tpu'",)),
        B("infonce-book build", "--device", "auto, cpu, cuda or cuda:N", "tpu", EXIT_2,
          ("build", "--device", "tpu"), ("'tpu'",)),
        B("infonce-book run", "device", "cuda only where a CUDA GPU is present", "cuda", EXIT_2,
          ("run", "c1_rate", "--device", "cuda"), ("no CUDA GPU",), needs_no_gpu=True),
        B("infonce-book run", "--seed", "an integer >= 0", "abc", EXIT_2,
          ("run", "c1_rate", "--seed", "abc"), ("'abc'",)),
        B("infonce-book ledger", "--format", "json or table", "xml", EXIT_2,
          ("ledger", "--format", "xml"), ("'xml'",)),
    ]


_SECTIONS = (_loss_info_nce_cases, _loss_other_cases, _model_vmf_cases, _model_other_cases,
             _theory_exact_bounds_cases, _theory_estimators_search_cases, _learning_datasets_cases,
             _utils_experiment_pipeline_cases, _theory_later_cases, _cli_cases)


def bad_inputs() -> list[BadInput]:
    """Every documented bad input (see module docstring), in the order of the book's table: the
    sections' cases, one section after the other."""
    v = _valid_inputs()
    return [case for section in _SECTIONS for case in section(v)]


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(cases: list[BadInput] | None = None) -> str:
    """The book's table of validated inputs: one row per case of :func:`bad_inputs`."""
    cases = bad_inputs() if cases is None else cases
    rows = ["| function | argument | accepted | bad value tested | error raised |", "|---|---|---|---|---|"]
    for c in cases:
        fn = f"`{c.function}`" if not c.function.startswith("infonce-book") else f"`{c.function}` (CLI)"
        rows.append(f"| {_cell(fn)} | `{_cell(c.argument)}` | {_cell(c.accepted)} | {_cell(c.given)} | "
                    f"{_cell(c.error_name)} |")
    n_fn = len({c.function for c in cases})
    return "\n".join(rows) + (f"\n\n{len(cases)} bad inputs of {n_fn} functions, classes and commands; each row is "
                              f"a case of `tests/testing/test_robustness.py`.\n")


