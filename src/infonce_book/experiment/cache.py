"""The experiment cache: a runner's table stored on disk under a hash of its configuration.

:func:`cached` wraps a runner ``fn(**config) -> DataFrame``. The key is a hash of the function's
name, the configuration (a reference model passed as an argument enters by its ``params``) and
the source of the whole package (so any change in ``src/`` invalidates it); tables are written
atomically, and a corrupt entry is recomputed, never trusted.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json

import pandas as pd

from .paths import atomic_write_bytes, cache_dir, source_hash

__all__ = ["cached", "source_hash"]


def _key_default(obj):
    """JSON form of a configuration value that is not plain JSON: a model by its ``params``."""
    params = getattr(obj, "params", None)
    if isinstance(params, dict):
        return {"params": params}
    return str(obj)


def cached(fn):
    """Decorator: cache ``fn(**config) -> DataFrame`` under ``cache_dir()`` by config hash.

    Call the wrapper with keyword arguments only. Pass ``use_cache=False`` to recompute (the
    result is still written); ``wrapper.uncached`` is the plain function.
    """

    @functools.wraps(fn)
    def wrapper(use_cache: bool = True, **config):
        key = hashlib.sha256(json.dumps({"fn": f"{fn.__module__}.{fn.__qualname__}", "config": config,
                                         "src": source_hash()},
                                        sort_keys=True, default=_key_default).encode()).hexdigest()[:24]
        module = fn.__module__.removeprefix("infonce_book.").removeprefix("chapters.")
        path = cache_dir() / f"{module}.{fn.__name__}-{key}.pkl"  # e.g. c5_generalisation.runners.train_cell-...
        if use_cache and path.is_file():
            try:
                return pd.read_pickle(path)
            except Exception:  # a corrupt entry is recomputed, never trusted
                path.unlink(missing_ok=True)
        table = fn(**config)
        buf = io.BytesIO()
        table.to_pickle(buf)
        atomic_write_bytes(path, buf.getvalue())
        return table

    wrapper.uncached = fn
    return wrapper
