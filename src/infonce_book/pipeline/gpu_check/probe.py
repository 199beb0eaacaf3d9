"""The probe: what the stage environment imports, in which version, from where.

``gpu_check.py probe`` runs with the stages' environment (``PYTHONPATH=<work>/site:src``) and prints
one JSON line: the interpreter, each module of :data:`PROBE_MODULES` with its version and origin
(``carried``: the carried wheels' folder, ``src``: the tree's package, ``image``: the interpreter's
own packages), torch and its GPU, and every requirement of a carried distribution that the
environment does not meet. The setup stage puts it into ``environment.json``.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import sys
from importlib import metadata

from .carried import requirements
from .machine import CARRIED_WITHOUT_DEPS, ROOT, canon

__all__ = ["PROBE_MODULES", "main_probe", "origin", "probe"]

PROBE_MODULES = {  # module: distribution
    "torch": "torch", "numpy": "numpy", "scipy": "scipy", "sympy": "sympy", "pandas": "pandas",
    "matplotlib": "matplotlib", "seaborn": "seaborn", "sklearn": "scikit-learn", "yaml": "pyyaml",
    "tabulate": "tabulate", "pytest": "pytest", "hypothesis": "hypothesis", "papermill": "papermill",
    "jupytext": "jupytext", "nbformat": "nbformat", "nbclient": "nbclient", "ipykernel": "ipykernel",
    "jupyter_client": "jupyter-client", "zmq": "pyzmq", "IPython": "ipython",
    "matplotlib_inline": "matplotlib-inline", "myst_nb.ext.glue": "myst-nb", "docutils": "docutils",
    "info_nce": "info-nce-pytorch", "infonce_book": "infonce-book",
}


def origin(path, site: str, src: str) -> str:
    """Where a module file comes from: ``carried`` (under ``site``), ``src`` or ``image``."""
    path = str(path or "")
    return "carried" if path.startswith(site) else "src" if path.startswith(src) else "image"


def _modules(site: str, src: str) -> dict:
    out = {}
    for mod, dist in PROBE_MODULES.items():
        try:
            m = importlib.import_module(mod)
            try:
                version = metadata.version(dist)
            except metadata.PackageNotFoundError:
                version = getattr(m, "__version__", "?")
            out[mod] = {"version": version, "origin": origin(getattr(m, "__file__", ""), site, src)}
        except Exception as err:  # recorded, not raised
            out[mod] = {"error": f"{type(err).__name__}: {err}"}
    return out


def _torch() -> dict:
    try:
        import torch  # the image's; recorded, not needed to import the check

        cuda = torch.cuda.is_available()
        out = {"version": torch.__version__, "cuda_build": torch.version.cuda, "cuda_available": cuda,
               "cudnn": torch.backends.cudnn.version() if cuda else None, "threads": torch.get_num_threads()}
        if cuda:
            props = torch.cuda.get_device_properties(0)
            out.update(device=props.name, capability=f"{props.major}.{props.minor}",
                       memory_gib=round(props.total_memory / 2**30, 1),
                       multiprocessors=props.multi_processor_count, bf16_supported=torch.cuda.is_bf16_supported())
        return out
    except Exception as err:
        return {"error": f"{type(err).__name__}: {err}"}


def _unmet(site: str) -> list[str]:
    """Every carried distribution's requirements, against what this environment has."""
    unmet = []
    try:
        from packaging.requirements import Requirement  # on the GPU machine's image, not needed to import

        py = f"{sys.version_info.major}.{sys.version_info.minor}"
        for dist in metadata.distributions(path=[site]):
            name = canon(dist.metadata["Name"])
            reqs = ([Requirement(d) for d in CARRIED_WITHOUT_DEPS[name]] if name in CARRIED_WITHOUT_DEPS
                    else requirements(dist, py))
            for req in reqs:
                try:
                    have = metadata.version(req.name)
                except metadata.PackageNotFoundError:
                    unmet.append(f"{dist.metadata['Name']} needs {req}: missing")
                    continue
                if req.specifier and not req.specifier.contains(have, prereleases=True):
                    unmet.append(f"{dist.metadata['Name']} needs {req}: found {have}")
    except Exception as err:
        unmet.append(f"could not check requirements: {type(err).__name__}: {err}")
    return sorted(set(unmet))


def probe(site: str | None = None, src: str | None = None) -> dict:
    """What this interpreter imports (see the module docstring). ``site``: the carried wheels'
    folder (default ``$GPU_CHECK_SITE``); ``src``: the tree's ``src/``."""
    site = site or os.environ.get("GPU_CHECK_SITE", "\0")
    src = src or str(ROOT / "src")
    return {"python": platform.python_version(), "executable": sys.executable, "platform": platform.platform(),
            "libc": " ".join(platform.libc_ver()), "cpu_count": os.cpu_count(), "modules": _modules(site, src),
            "torch": _torch(), "unmet_requirements": _unmet(site)}


def main_probe(args=None) -> int:
    """``gpu_check.py probe``: print :func:`probe` as one JSON line."""
    print(json.dumps(probe()))
    return 0
