"""The sympy symbols that the derivations share, named as on the book's notation page.

``eps = 1/k``; ``beta = 1/tau`` the inverse temperature; ``kappa`` the vMF concentration; ``u_j``
the raw moments of the positive's normalised weight ``U = W+/mu`` and ``v_r`` the central moments
of a negative's ``V = W/mu`` (book, Chapter 1); ``t``, ``a`` the variables of Lemma ``c1-lem-log``.
"""

from __future__ import annotations

import sympy as sp

# Symbols shared with the book's notation page.
eps = sp.Symbol("epsilon", positive=True)  # eps = 1/k
k = sp.Symbol("k", positive=True, integer=True)
beta, kappa, tau = sp.symbols("beta kappa tau", positive=True)
t, a = sp.symbols("t a", positive=True)
u1, u2, u3, u4 = sp.symbols("u1:5", positive=True)
v2, v4 = sp.symbols("v2 v4", positive=True)
v3 = sp.Symbol("v3", real=True)
v5, v6 = sp.symbols("v5 v6", real=True)


def _v(r: int) -> sp.Symbol:
    """Central moment ``v_r = E (V - 1)^r`` of the normalised negative weight."""
    return {2: v2, 3: v3, 4: v4, 5: v5, 6: v6}.get(r) or sp.Symbol(f"v{r}", real=True)


def _u(j: int) -> sp.Symbol:
    """Raw moment ``u_j = E U^j`` of the normalised positive weight."""
    return {1: u1, 2: u2, 3: u3, 4: u4}.get(j) or sp.Symbol(f"u{j}", positive=True)
