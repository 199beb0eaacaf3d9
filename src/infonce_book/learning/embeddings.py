"""Embedding classes with explicit parameter-Lipschitz constants (book, chapter C4/C5).

Each class is a ``torch.nn.Module`` whose parameters live in a Euclidean ball
``Theta = {theta : |theta - theta0| <= radius}`` (all parameters flattened into one vector,
Euclidean = Frobenius norm), maps inputs into the closed unit ball of ``R^d`` (so every
similarity ``<phi(x), phi(y)>`` lies in ``[-1, 1]``), and exposes

* ``lipschitz(x)``: ``L(x)`` with ``|phi_theta(x) - phi_theta'(x)| <= L(x) |theta - theta'|`` for all
  ``theta, theta'`` in ``Theta`` (book, Lemma ``c4-lem-classes``),
* ``n_params``, ``radius``, ``center`` (``theta0``), ``theta`` (the current flat vector),
  ``project_()`` (Euclidean projection of the parameters back onto ``Theta``) and
  ``random_parameters(generator)`` (a draw uniform in ``Theta``).

Classes:

* :class:`NormalisedLinear`: ``phi_A(x) = A x / |A x|`` on the sphere, ``A`` in the Frobenius ball
  of radius ``r < 1`` around the identity; ``L(x) = 1/(1 - r)`` for every ``x != 0``: no
  dependence on the input norm or on the dimension.
* :class:`BallLinear`: ``phi_W(x) = Pi(W x)`` with ``Pi(z) = z / max(1, |z|)`` the (1-Lipschitz)
  projection onto the unit ball; ``L(x) = |x|`` -- unbounded for Gaussian inputs.
* :class:`FrobeniusLinear`: ``phi_W(x) = W x`` with ``|W|_F <= b <= 1`` on inputs in the unit
  ball; ``L(x) = |x|``; a fixed norm budget whatever the dimensions.
* :class:`BallMLP`: ``phi(x) = Pi(W2 tanh(W1 x))`` with ``h`` hidden units;
  ``L(x) = sqrt(h + b^2 |x|^2)`` with ``b = |W2^0|_op + radius`` bounding ``|W2|_op`` on ``Theta``.

For real data (no parameter set, no Lipschitz constant): :class:`SphereMLP`, a small MLP onto the
sphere, and :class:`SphereMLPEnsemble`, several of them trained together.
"""

from __future__ import annotations

import math

import torch

from ..losses import info_nce_from_similarities
from ..utils.validation import check_float_tensor, check_k, check_scalar


def ball_projection(z: torch.Tensor) -> torch.Tensor:
    """``z / max(1, |z|)`` row-wise (last dimension): the Euclidean projection onto the closed unit
    ball, 1-Lipschitz."""
    return z / torch.linalg.vector_norm(z, dim=-1, keepdim=True).clamp(min=1.0)


def _check_radius(radius, upper=None) -> float:
    radius = check_scalar(radius, "radius", gt=0)
    if upper is not None and radius >= upper:
        raise ValueError(f"radius must be < {upper:g} for this class, got radius={radius!r}")
    return float(radius)


class _BallClass(torch.nn.Module):
    """Shared machinery: a flat parameter vector in the ball of ``radius`` around ``center``."""

    input_dim: int

    def _init_ball(self, center: torch.Tensor, radius: float) -> None:
        self.register_buffer("center", center.detach().clone())
        self.radius = radius
        self.theta_param = torch.nn.Parameter(center.detach().clone())

    @property
    def n_params(self) -> int:
        return int(self.center.numel())

    @property
    def theta(self) -> torch.Tensor:
        return self.theta_param

    @torch.no_grad()
    def set_theta_(self, theta: torch.Tensor) -> "_BallClass":
        """Set the parameters to ``theta`` (shape ``(n_params,)``), which must lie in Theta."""
        if theta.shape != self.center.shape:
            raise ValueError(f"theta must have shape {tuple(self.center.shape)}, got {tuple(theta.shape)}")
        dist = float(torch.linalg.vector_norm(theta.to(self.center) - self.center))
        if dist > self.radius * (1 + 1e-9):
            raise ValueError(f"theta is at distance {dist:.6g} from the centre, outside the ball of "
                             f"radius {self.radius:g}; call project_() or pass a point of Theta")
        self.theta_param.copy_(theta)
        return self

    @torch.no_grad()
    def project_(self) -> "_BallClass":
        """Project the parameters onto Theta (in place)."""
        delta = self.theta_param - self.center
        norm = float(torch.linalg.vector_norm(delta))
        if norm > self.radius:
            self.theta_param.copy_(self.center + delta * (self.radius / norm))
        return self

    def random_parameters(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """A draw uniform in Theta (shape ``(n_params,)``)."""
        g = torch.randn(self.n_params, generator=generator, dtype=self.center.dtype, device=self.center.device)
        u = torch.rand((), generator=generator, dtype=self.center.dtype, device=self.center.device)
        return self.center + g / torch.linalg.vector_norm(g) * self.radius * u ** (1.0 / self.n_params)

    def _check_input(self, x) -> torch.Tensor:
        check_float_tensor(x, "x")
        if x.dim() < 1 or x.shape[-1] != self.input_dim:
            raise ValueError(f"x must have shape (..., {self.input_dim}), got {tuple(x.shape)}")
        return x.to(self.center.dtype)


class NormalisedLinear(_BallClass):
    """``phi_A(x) = A x / |A x|`` with ``|A - I|_F <= radius < 1`` (on the sphere ``S^{dim-1}``).

    Since ``|A - I|_op <= |A - I|_F <= r``, ``|A x| >= (1 - r)|x|``, and the derivative of
    ``v -> v/|v|`` has operator norm ``1/|v|``, so ``L(x) = 1/(1 - r)`` (book, Lemma
    ``c4-lem-classes``). Inputs must be non-zero.

    Args:
        dim: input and output dimension >= 2. radius: in (0, 1). dtype: parameter dtype.
    """

    def __init__(self, dim: int, radius: float = 0.5, *, dtype=torch.float64):
        super().__init__()
        dim = check_k(dim, "dim")
        if dim < 2:
            raise ValueError(f"dim must be >= 2 (a sphere S^(dim-1) with more than two points), got dim={dim}")
        self.input_dim = self.output_dim = dim
        self._init_ball(torch.eye(dim, dtype=dtype).reshape(-1), _check_radius(radius, upper=1.0))

    def __repr__(self) -> str:
        return f"NormalisedLinear(dim={self.input_dim}, radius={self.radius:g})"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._check_input(x)
        A = self.theta_param.reshape(self.input_dim, self.input_dim)
        return torch.nn.functional.normalize(x @ A.T, dim=-1)

    def lipschitz(self, x: torch.Tensor) -> torch.Tensor:
        """``L(x) = 1/(1 - radius)`` for every non-zero x: shape ``x.shape[:-1]``."""
        x = self._check_input(x)
        return torch.full(x.shape[:-1], 1.0 / (1.0 - self.radius), dtype=x.dtype, device=x.device)


class BallLinear(_BallClass):
    """``phi_W(x) = Pi(W x)``, ``W`` (dim_out x dim_in) in the Frobenius ball of ``radius`` around
    ``scale * W0`` (``W0`` with orthonormal rows, seeded); ``L(x) = |x|``.

    Args:
        dim_in, dim_out: dimensions >= 1 (dim_out <= dim_in). scale: size of the centre.
        radius: > 0. seed: for ``W0``.
    """

    def __init__(self, dim_in: int, dim_out: int, *, scale: float = 0.1, radius: float = 0.05, seed: int = 0,
                 dtype=torch.float64):
        super().__init__()
        dim_in, dim_out = check_k(dim_in, "dim_in"), check_k(dim_out, "dim_out")
        if dim_out > dim_in:
            raise ValueError(f"dim_out must be <= dim_in, got dim_in={dim_in}, dim_out={dim_out}")
        gen = torch.Generator().manual_seed(int(seed))
        q, _ = torch.linalg.qr(torch.randn(dim_in, dim_out, generator=gen, dtype=dtype))
        self.input_dim, self.output_dim = dim_in, dim_out
        self._init_ball((scale * q.T).reshape(-1), _check_radius(radius))

    def __repr__(self) -> str:
        return f"BallLinear(dim_in={self.input_dim}, dim_out={self.output_dim}, radius={self.radius:g})"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._check_input(x)
        W = self.theta_param.reshape(self.output_dim, self.input_dim)
        return ball_projection(x @ W.T)

    def lipschitz(self, x: torch.Tensor) -> torch.Tensor:
        """``L(x) = |x|``: shape ``x.shape[:-1]``."""
        return torch.linalg.vector_norm(self._check_input(x), dim=-1)


class BallMLP(_BallClass):
    """``phi(x) = Pi(W2 tanh(W1 x))`` (no biases), parameters in the ball of ``radius`` around a
    seeded initialisation (``W1 ~ N(0, 1/dim_in)``, ``W2 ~ N(0, 1/hidden)``).

    ``L(x) = sqrt(hidden + b^2 |x|^2)`` with ``b = |W2^0|_op + radius``: since ``|tanh(W1 x)| <= sqrt(h)``,
    tanh is 1-Lipschitz and ``|W2|_op <= b`` on Theta,
    ``|W2 t - W2' t'| <= sqrt(h) |dW2|_F + b |x| |dW1|_F <= L(x) |dtheta|`` (Cauchy--Schwarz).
    """

    def __init__(self, dim_in: int, hidden: int, dim_out: int, *, radius: float = 0.5, seed: int = 0,
                 dtype=torch.float64):
        super().__init__()
        dim_in, hidden, dim_out = check_k(dim_in, "dim_in"), check_k(hidden, "hidden"), check_k(dim_out, "dim_out")
        gen = torch.Generator().manual_seed(int(seed))
        W1 = torch.randn(hidden, dim_in, generator=gen, dtype=dtype) / math.sqrt(dim_in)
        W2 = torch.randn(dim_out, hidden, generator=gen, dtype=dtype) / math.sqrt(hidden)
        self.input_dim, self.hidden, self.output_dim = dim_in, hidden, dim_out
        self._init_ball(torch.cat([W1.reshape(-1), W2.reshape(-1)]), _check_radius(radius))
        self.w2_bound = float(torch.linalg.matrix_norm(W2, ord=2)) + self.radius

    def __repr__(self) -> str:
        return (f"BallMLP(dim_in={self.input_dim}, hidden={self.hidden}, dim_out={self.output_dim}, "
                f"radius={self.radius:g})")

    def _weights(self):
        n1 = self.hidden * self.input_dim
        W1 = self.theta_param[:n1].reshape(self.hidden, self.input_dim)
        W2 = self.theta_param[n1:].reshape(self.output_dim, self.hidden)
        return W1, W2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._check_input(x)
        W1, W2 = self._weights()
        return ball_projection(torch.tanh(x @ W1.T) @ W2.T)

    def lipschitz(self, x: torch.Tensor) -> torch.Tensor:
        """``L(x) = sqrt(hidden + b^2 |x|^2)``: shape ``x.shape[:-1]``."""
        r2 = (self._check_input(x) ** 2).sum(-1)
        return torch.sqrt(self.hidden + self.w2_bound**2 * r2)


class FrobeniusLinear(_BallClass):
    """``phi_W(x) = W x`` with ``|W|_F <= radius <= 1``, on inputs in the closed unit ball of
    ``R^dim_in``: a norm-constrained linear class into the unit ball of ``R^dim_out``.

    ``|W x| <= |W|_op |x| <= |W|_F <= 1``, so similarities lie in ``[-1, 1]``; the similarity
    ``<W x, W y> = <W^T W, y x^T>_F`` is linear in ``M = W^T W``, with ``|M|_F <= |W|_F^2``, which
    gives a complexity bound free of both dimensions (book, Theorem ``c4-thm-dimension-free``).
    ``L(x) = |x|``. The centre of the parameter ball is ``W = 0``, where the gradient of every
    similarity vanishes: an optimiser must start elsewhere (e.g. at ``random_parameters``).

    Args:
        dim_in, dim_out: dimensions >= 1. radius: the Frobenius budget, in (0, 1].
    Raises:
        ValueError: a dimension < 1, a radius outside (0, 1]; in ``forward``, an input of norm > 1.
    """

    def __init__(self, dim_in: int, dim_out: int, radius: float = 1.0, *, dtype=torch.float64):
        super().__init__()
        dim_in, dim_out = check_k(dim_in, "dim_in"), check_k(dim_out, "dim_out")
        radius = _check_radius(radius)
        if radius > 1.0:
            raise ValueError(f"radius must be in (0, 1] (embeddings in the unit ball), got radius={radius!r}")
        self.input_dim, self.output_dim = dim_in, dim_out
        self._init_ball(torch.zeros(dim_out * dim_in, dtype=dtype), radius)

    def __repr__(self) -> str:
        return f"FrobeniusLinear(dim_in={self.input_dim}, dim_out={self.output_dim}, radius={self.radius:g})"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._check_input(x)
        big = float(torch.linalg.vector_norm(x, dim=-1).max()) if x.numel() else 0.0
        if big > 1.0 + 1e-9:
            raise ValueError(f"inputs must lie in the closed unit ball, got a norm of {big:.6g}")
        W = self.theta_param.reshape(self.output_dim, self.input_dim)
        return x @ W.T

    def lipschitz(self, x: torch.Tensor) -> torch.Tensor:
        """``L(x) = |x|``: shape ``x.shape[:-1]``."""
        return torch.linalg.vector_norm(self._check_input(x), dim=-1)


def reference_embedding(model):
    """The book's reference embedding class for the data of a reference model: a
    :class:`NormalisedLinear` ``(dim, radius 0.5)`` for data on the sphere (centred at the identity,
    ``model.identity_embedding``), else a :class:`BallLinear` ``(dim -> 4, scale 0.25, radius 0.05)``.
    Source: book, continuity chapter, "Lipschitz constants of three classes"."""
    if model.identity_embedding:
        return NormalisedLinear(model.dim, 0.5)
    return BallLinear(model.dim, 4, scale=0.25, radius=0.05)


def loss_per_tuple(phi, x: torch.Tensor, x_pos: torch.Tensor, x_neg: torch.Tensor, tau, *,
                   variant: str = "standard") -> torch.Tensor:
    """InfoNCE of each tuple for an embedding ``phi`` into the unit ball: shape ``(n,)``, in nats.

    Args:
        phi: a module mapping ``(..., p)`` inputs to ``(..., d)`` vectors of norm <= 1.
        x, x_pos: (n, p) anchors and positives; x_neg: (n, k, p) negatives (k >= 1).
        tau: temperature > 0. variant: "standard" or "decoupled".
    Source: book eq. ``notation-infonce`` with ``s = <phi(x), phi(y)>``.
    """
    for name, t in (("x", x), ("x_pos", x_pos), ("x_neg", x_neg)):
        check_float_tensor(t, name)
    if x.dim() != 2 or x_pos.shape != x.shape or x_neg.dim() != 3 or x_neg.shape[0] != x.shape[0] \
            or x_neg.shape[2] != x.shape[1]:
        raise ValueError(f"shapes must be x (n, p), x_pos (n, p), x_neg (n, k, p); got {tuple(x.shape)}, "
                         f"{tuple(x_pos.shape)}, {tuple(x_neg.shape)}")
    if x.shape[0] == 0 or x_neg.shape[1] == 0:
        raise ValueError(f"need n >= 1 tuples and k >= 1 negatives; got x {tuple(x.shape)}, x_neg {tuple(x_neg.shape)}")
    a, p, ng = phi(x), phi(x_pos), phi(x_neg)
    s_pos = (a * p).sum(-1)
    s_neg = torch.einsum("nd,nkd->nk", a, ng)
    return info_nce_from_similarities(s_pos, s_neg, tau, variant=variant, reduction="none")


class SphereMLP(torch.nn.Module):
    """``phi(x) = normalize(W2 relu(W1 x + b1) + b2)``: a small MLP onto the sphere ``S^{dim_out - 1}``
    (used for real data; no parameter set or Lipschitz constant: it is trained, not analysed).

    Args: dim_in, hidden, dim_out: sizes >= 1 (dim_out >= 2). seed: initialisation.
    """

    def __init__(self, dim_in: int, hidden: int, dim_out: int, *, seed: int = 0, dtype=torch.float32):
        super().__init__()
        dim_in, hidden, dim_out = check_k(dim_in, "dim_in"), check_k(hidden, "hidden"), check_k(dim_out, "dim_out")
        if dim_out < 2:
            raise ValueError(f"dim_out must be >= 2 (a sphere S^(dim_out-1)), got dim_out={dim_out}")
        gen = torch.Generator().manual_seed(int(seed))
        self.input_dim = dim_in
        self.l1 = torch.nn.Linear(dim_in, hidden, dtype=dtype)
        self.l2 = torch.nn.Linear(hidden, dim_out, dtype=dtype)
        with torch.no_grad():
            for layer in (self.l1, self.l2):
                bound = 1.0 / math.sqrt(layer.in_features)
                layer.weight.copy_(torch.empty_like(layer.weight).uniform_(-bound, bound, generator=gen))
                layer.bias.copy_(torch.empty_like(layer.bias).uniform_(-bound, bound, generator=gen))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_float_tensor(x, "x")
        if x.shape[-1] != self.input_dim:
            raise ValueError(f"x must have shape (..., {self.input_dim}), got {tuple(x.shape)}")
        x = x.to(self.l1.weight.dtype)
        return torch.nn.functional.normalize(self.l2(torch.relu(self.l1(x))), dim=-1)


class SphereMLPEnsemble(torch.nn.Module):
    """``S`` independent :class:`SphereMLP` embeddings evaluated and trained together.

    Member ``s`` is initialised exactly as ``SphereMLP(dim_in, hidden, dim_out, seed=seeds[s])``;
    the weights are stacked into batched tensors so that one batched matrix product serves all
    members (training many small models one after the other costs mostly per-step overhead).
    Since Adam acts coordinate-wise and the members' parameters are disjoint, training the
    ensemble on the sum of the members' losses trains each member as it would be trained alone.

    ``forward(x)``: ``x`` of shape ``(S, n, dim_in)`` (one batch per member) or ``(n, dim_in)``
    (the same inputs for every member) -> ``(S, n, dim_out)``, unit norm.

    Args:
        seeds: one initialisation seed per member (S >= 1). dim_in, hidden, dim_out: as for
            :class:`SphereMLP` (dim_out >= 2). dtype: parameter dtype.

    Examples:
        >>> ens = SphereMLPEnsemble([0, 1], 64, 8, 4)
        >>> x = torch.rand(5, 64)
        >>> torch.allclose(ens(x)[1], SphereMLP(64, 8, 4, seed=1)(x), atol=1e-6)
        True
    """

    def __init__(self, seeds, dim_in: int, hidden: int, dim_out: int, *, dtype=torch.float32):
        super().__init__()
        seeds = [int(s) for s in seeds]
        if not seeds:
            raise ValueError("seeds must hold at least one seed (one per member)")
        members = [SphereMLP(dim_in, hidden, dim_out, seed=s, dtype=dtype) for s in seeds]
        self.seeds, self.input_dim, self.hidden, self.output_dim = seeds, dim_in, hidden, dim_out
        self.w1 = torch.nn.Parameter(torch.stack([m.l1.weight.detach() for m in members]))  # (S, h, p)
        self.b1 = torch.nn.Parameter(torch.stack([m.l1.bias.detach() for m in members])[:, None, :])
        self.w2 = torch.nn.Parameter(torch.stack([m.l2.weight.detach() for m in members]))  # (S, d, h)
        self.b2 = torch.nn.Parameter(torch.stack([m.l2.bias.detach() for m in members])[:, None, :])

    @property
    def n_members(self) -> int:
        return len(self.seeds)

    def __repr__(self) -> str:
        return (f"SphereMLPEnsemble(members={self.n_members}, dim_in={self.input_dim}, hidden={self.hidden}, "
                f"dim_out={self.output_dim})")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_float_tensor(x, "x")
        S = self.n_members
        if x.dim() == 2:
            x = x.unsqueeze(0).expand(S, -1, -1)
        if x.dim() != 3 or x.shape[0] != S or x.shape[-1] != self.input_dim:
            raise ValueError(f"x must have shape ({S}, n, {self.input_dim}) or (n, {self.input_dim}), got "
                             f"{tuple(x.shape)}")
        x = x.to(self.w1.dtype)
        h = torch.relu(torch.baddbmm(self.b1, x, self.w1.transpose(1, 2)))
        return torch.nn.functional.normalize(torch.baddbmm(self.b2, h, self.w2.transpose(1, 2)), dim=-1)

    def member_state(self, s: int) -> dict:
        """The state dict of member ``s`` as a :class:`SphereMLP` would hold it (detached copies)."""
        if not 0 <= int(s) < self.n_members:
            raise ValueError(f"member must be in [0, {self.n_members}), got {s!r}")
        return {"l1.weight": self.w1[s].detach().clone(), "l1.bias": self.b1[s, 0].detach().clone(),
                "l2.weight": self.w2[s].detach().clone(), "l2.bias": self.b2[s, 0].detach().clone()}

    def member(self, s: int) -> SphereMLP:
        """Member ``s`` as a stand-alone :class:`SphereMLP` (a copy of its current weights)."""
        phi = SphereMLP(self.input_dim, self.hidden, self.output_dim, seed=self.seeds[int(s)], dtype=self.w1.dtype)
        phi.load_state_dict(self.member_state(s))
        return phi
