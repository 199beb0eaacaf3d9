"""Profiles: how big a chapter's experiments are.

* ``smoke``: CI; the whole book in a few minutes on 2 CPU cores.
* ``standard``: the default local run on a CPU.
* ``full``: one GPU (``device=auto`` picks it).

Each chapter module states its own sizes for the three profiles (``SIZES`` in
``infonce_book.chapters.<stem>``); :func:`sizes_for` checks and picks one.
"""

from __future__ import annotations

PROFILES = ("smoke", "standard", "full")


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {list(PROFILES)}, got profile={profile!r}")
    return profile


def sizes_for(table: dict, profile: str) -> dict:
    """The sizes of ``profile`` from a chapter's ``SIZES`` table (a fresh dict).

    Raises:
        ValueError: unknown profile, or a table that does not give every profile the same keys.
    """
    check_profile(profile)
    missing = [p for p in PROFILES if p not in table]
    if missing:
        raise ValueError(f"the sizes table must give every profile {list(PROFILES)}; missing {missing}")
    keys = {p: set(table[p]) for p in PROFILES}
    if len({frozenset(k) for k in keys.values()}) != 1:
        raise ValueError(f"every profile of the sizes table must have the same keys; got {keys}")
    return dict(table[profile])
