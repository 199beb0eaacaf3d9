"""Chapter 6: the roles by which the page names the profile's values. The text quotes "the
lowest" and "the highest" training temperature (``lo``, ``hi``) and the two largest training ks
(``k1``, ``k2``, the pair of the equivalence test), whatever the profile trains at; a number of
the page is named ``f"{name}_{role}"`` (``gap_hi_k2``, ``c1_lo``)."""

from __future__ import annotations

__all__ = ["tau_roles", "k_roles", "by_tau_role"]


def tau_roles(values) -> dict:
    """``{"lo": smallest, "hi": largest}`` of the distinct values (the same value twice when there
    is only one): the page quotes the lowest and the highest temperature, whatever the profile."""
    v = sorted({float(x) for x in values})
    return {"lo": v[0], "hi": v[-1]}


def k_roles(ks) -> dict:
    """``{"k1": second largest, "k2": largest}`` of the distinct ks (the pair the equivalence test
    compares)."""
    v = sorted({int(x) for x in ks})
    return {"k1": v[-2] if len(v) > 1 else v[-1], "k2": v[-1]}


def by_tau_role(per_tau: dict) -> dict:
    """Flatten ``{tau: {name: value}}`` into ``{f"{name}_{role}": value}`` for the roles of
    :func:`tau_roles` (tau ``lo`` and ``hi``)."""
    out = {}
    for role, tau in tau_roles(per_tau).items():
        out.update({f"{name}_{role}": value for name, value in per_tau[tau].items()})
    return out
