"""The peer libraries' in-batch losses for ``bench_in_batch.py``, loaded without torchvision.

open_clip (``open_clip_torch``) and lightly import torchvision from their package ``__init__``
(for image models the losses do not use); installed with ``pip install --no-deps`` (a
torchvision wheel would pull another torch build), their loss modules are loaded here directly:
open_clip's ``loss.py`` from its file, lightly's ``loss/ntx_ent_loss.py`` with the package
``__init__`` files of ``lightly``, ``lightly.models``, ``lightly.models.modules`` and
``lightly.loss`` skipped and ``lightly.models.utils`` (torchvision's stochastic depth; the loss
calls it only when gathering across processes) left empty. Where torchvision is installed the
ordinary imports are used. Each loader returns the loss class, or None when the library is
missing.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys
import types

__all__ = ["load_clip_loss", "load_lightly_ntxent", "load_pml_ntxent", "load_pml_supcon"]


def _package_dir(name):
    spec = importlib.util.find_spec(name)  # a top-level package: found, not imported
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


@functools.cache
def load_clip_loss():
    """open_clip's ``ClipLoss`` class, or None."""
    try:
        from open_clip.loss import ClipLoss

        return ClipLoss
    except ImportError:
        pass
    root = _package_dir("open_clip")
    if root is None:
        return None
    spec = importlib.util.spec_from_file_location("open_clip_loss", os.path.join(root, "loss.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ClipLoss


@functools.cache
def load_lightly_ntxent():
    """lightly's ``NTXentLoss`` class, or None."""
    try:
        from lightly.loss import NTXentLoss

        return NTXentLoss
    except ImportError:
        pass
    root = _package_dir("lightly")
    if root is None:
        return None
    for name in [k for k in sys.modules if k == "lightly" or k.startswith("lightly.")]:
        del sys.modules[name]  # what the failed import left half-initialised
    for name, sub in (("lightly", ""), ("lightly.models", "models"), ("lightly.models.modules", "models/modules"),
                      ("lightly.loss", "loss")):
        stub = types.ModuleType(name)
        stub.__path__ = [os.path.join(root, sub)]
        sys.modules[name] = stub
    sys.modules["lightly.models.utils"] = types.ModuleType("lightly.models.utils")
    return importlib.import_module("lightly.loss.ntx_ent_loss").NTXentLoss


@functools.cache
def load_pml_ntxent():
    """pytorch-metric-learning's ``NTXentLoss`` class, or None."""
    try:
        from pytorch_metric_learning.losses import NTXentLoss
    except ImportError:
        return None
    return NTXentLoss


@functools.cache
def load_pml_supcon():
    """pytorch-metric-learning's ``SupConLoss`` class, or None."""
    try:
        from pytorch_metric_learning.losses import SupConLoss
    except ImportError:
        return None
    return SupConLoss
