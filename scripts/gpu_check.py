#!/usr/bin/env python3
"""GPU check that needs no network: GPU tests, the CUDA benchmark and every chapter, offline.

    make gpu-wheels                           # here, with network: fill .gpu-wheels/ for the GPU
                                              # machine's Python (3.12, x86-64 Linux)
    bash scripts/gpu_check.sh                 # there: its own python3, the package from src/,
                                              # the carried wheels; nothing downloaded
    bash scripts/gpu_check.sh --rehearse      # here, on a CPU: the same route (smoke profile, cpu)

The GPU machine this project can use is offline, runs one command of at most 10 minutes and
returns at most 8 files. Its ``python3`` has torch (2.11, CUDA), numpy, scipy, pandas,
matplotlib, pytest, hypothesis and more (``DEVICE_PACKAGES``) but not the notebook tool chain.
So this script

1. installs the carried wheels (``--wheels``, default ``.gpu-wheels/``) with
   ``python3 -m pip install --no-index --no-deps --target <work>/site`` and runs everything with
   ``PYTHONPATH=<work>/site:src`` (the package is not installed; a small ``dist-info`` gives it
   its version);
2. runs, in order and each within a time budget (a stage past its budget is stopped, recorded as
   ``timed out`` and the next stage still gets its own time): ``setup`` (environment, wheels,
   imports), ``tests`` (``TEST_FILES``: the GPU tests and the loss tests, also on CUDA), the
   ``benchmark`` (``benchmarks/bench_infonce.py``) and the ``chapters`` (each one through
   papermill, ``python -m infonce_book run``, or, when the carried wheels are missing, through
   ``direct-chapter`` below, which runs the chapter's code cells in a plain interpreter); each
   chapter gets a fair share of the time left, so that one slow chapter cannot eat the others';
3. writes one bundle of at most 8 files (``BUNDLE``) to ``$OUT`` when that is set (the device
   tool returns it), else to ``_build/gpu_check/``; it is written also when a stage fails or
   times out. The exit status is 0 only when every stage passed.

``--rehearse`` runs the same route on a CPU machine, offline (``PIP_NO_INDEX=1``): it builds a
stand-in for the GPU machine's interpreter (a virtual environment that sees only the
distributions of the project's ``.venv`` that the GPU machine also has), rebuilds the carried
wheels from the ``.venv``'s installed copies (the same names as ``make gpu-wheels`` downloads,
for this interpreter's version), runs ``run --profile smoke --device cpu`` with them, and checks
the bundle. It needs no registry and no ``.gpu-wheels/``.

Standard library only at import time: the orchestrator runs before the wheels are installed.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_WHEELS = ROOT / ".gpu-wheels"
DEFAULT_WORK = ROOT / "_build" / "gpu_check"

# What the offline GPU machine's python3 already has: the package list of its image (read on
# 2026-11-17; Python 3.12.3, torch 2.11.0+cu130). Everything the check needs beyond these is
# carried as wheels.
DEVICE_PYTHON = "3.12"
DEVICE_PACKAGES = frozenset("""
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build
certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock
flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx
huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt
jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities
linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes
mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja numba
numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse
nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx
onnx-ir onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix
orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker prometheus-client
propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions
pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist python-dateutil
pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image
scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six
sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl
tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics
torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop
wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp
""".split())
# What the check needs that the image lacks: the notebook tool chain (papermill executes the
# chapters) and the benchmark's peer library; with all their dependencies the image lacks.
CARRIED_ROOTS = ("papermill", "jupytext", "nbformat", "nbclient", "ipykernel")
# The benchmark's peer (the `bench` extra): always carried by `make gpu-wheels`, which installs it
# first; a rehearsal carries it when the .venv has it (else the benchmark marks it missing).
OPTIONAL_ROOTS = ("info-nce-pytorch",)
# Carried without their declared dependencies: myst-nb's (sphinx, myst-parser, jupyter-cache, ...)
# serve the book build, which does not run there; chapters only call ``myst_nb.glue``, which
# imports IPython, nbformat and docutils.
CARRIED_WITHOUT_DEPS = {"myst-nb": ("docutils",)}
# Modules the chapters' kernel imports from the carried wheels (the setup stage checks them).
NOTEBOOK_MODULES = ("papermill", "jupytext", "nbformat", "nbclient", "ipykernel", "matplotlib_inline",
                    "myst_nb.ext.glue")
# The GPU tests (marker gpu) and the loss tests; tests/pipeline/test_gpu_check.py checks that every
# test file with a gpu test is listed.
TEST_FILES = ("tests/utils/test_device.py", "tests/losses/test_losses.py", "tests/losses/test_on_device.py")
# The result bundle: at most 8 files (what the GPU machine returns).
BUNDLE = ("environment.json", "timings.json", "ledger.json", "tests.xml", "benchmark.csv", "benchmark.md",
          "benchmark.png", "log.txt")
STAGES = ("setup", "tests", "benchmark", "chapters")
# Time budgets (seconds): the whole run must end inside the GPU machine's 10-minute command.
DEVICE_BUDGET_S = 540
STAGE_BUDGET_S = {"setup": 60, "tests": 90, "benchmark": 120}  # chapters: the rest (at least 255 s)
RESERVE_S = 15  # kept back for writing the bundle
# Benchmark grids: on the GPU, k up to 10^6 at B = 128 (memory at k = 10^6 included); in the
# rehearsal, two small configurations (the route, not the numbers, is under test there).
BENCH_ARGS = {
    "cuda": ["--batch-sizes", "128", "--dims", "64,256", "--ks", "1000,10000,100000,1000000",
             "--min-time", "0.3", "--timeout", "60"],
    "cpu": ["--batch-sizes", "32", "--dims", "64", "--ks", "1000,10000", "--min-time", "0.05",
            "--min-repeats", "2", "--threads", "1", "--timeout", "60"],
}
# Manylinux tags the GPU machine's interpreter accepts (x86-64, glibc 2.39 on its Ubuntu 24.04 image).
DEVICE_PLATFORMS = tuple(f"manylinux_2_{n}_x86_64" for n in range(39, 16, -1)) + (
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _say(msg: str) -> None:
    print(msg, flush=True)


# ----------------------------------------------------------------------------------------------
# The carried set (computed from an installed environment: the project's .venv).
# ----------------------------------------------------------------------------------------------

def _marker_env(python_version: str) -> dict:
    return {"python_version": python_version, "python_full_version": f"{python_version}.0",
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "os_name": "posix", "extra": ""}


def _requirements(dist, python_version: str):
    """The names a distribution requires for ``python_version`` (no extras)."""
    from packaging.requirements import Requirement

    env = _marker_env(python_version)
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate(env):
            yield req


def carried_distributions(python_version: str = DEVICE_PYTHON, *, optional: bool = True) -> list[tuple[str, str]]:
    """``[(name, version)]``: ``CARRIED_ROOTS``, ``CARRIED_WITHOUT_DEPS`` and ``OPTIONAL_ROOTS``
    (``optional=True``: required; ``False``: where installed) with every dependency (for
    ``python_version``) that ``DEVICE_PACKAGES`` lacks, at the versions installed in the running
    interpreter's environment.

    Raises:
        SystemExit: a needed distribution is not installed here (names the chain that needs it).
    """
    from importlib import metadata

    device = {_canon(n) for n in DEVICE_PACKAGES}
    roots = CARRIED_ROOTS + tuple(CARRIED_WITHOUT_DEPS)
    for name in OPTIONAL_ROOTS:
        try:
            metadata.distribution(name)
            roots += (name,)
        except metadata.PackageNotFoundError:
            if optional:
                roots += (name,)  # and fail below, naming it
    todo = [(name, ()) for name in roots]
    found: dict[str, tuple[str, str]] = {}
    while todo:
        name, chain = todo.pop()
        key = _canon(name)
        if key in found or key in device:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"{name} (needed by {' <- '.join(reversed(chain)) or 'the check'}) is not "
                             f"installed in {sys.prefix}; run `make install` (and `pip install -e .[bench]`)") from None
        found[key] = (dist.metadata["Name"], dist.version)
        if key in CARRIED_WITHOUT_DEPS:
            todo += [(dep, chain + (key,)) for dep in CARRIED_WITHOUT_DEPS[key]]
        else:
            todo += [(req.name, chain + (key,)) for req in _requirements(dist, python_version)]
    return sorted(found.values(), key=lambda nv: _canon(nv[0]))


def check_wheel_folder(folder: Path, python_version: str = DEVICE_PYTHON) -> list[str]:
    """Problems with a folder of carried wheels: two versions of one name, or a requirement (for
    ``python_version``) that neither a carried wheel nor the device image provides."""
    from email.parser import Parser

    from packaging.requirements import Requirement

    env = _marker_env(python_version)
    device = {_canon(n) for n in DEVICE_PACKAGES}
    wheels = sorted(Path(folder).glob("*.whl"))
    metas, problems = {}, []
    for whl in wheels:
        with zipfile.ZipFile(whl) as z:
            meta_name = next(n for n in z.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
            meta = Parser().parsestr(z.read(meta_name).decode("utf-8"))
        key = _canon(meta["Name"])
        if key in metas:
            problems.append(f"two wheels of {meta['Name']}: {metas[key][0].name} and {whl.name}")
        metas[key] = (whl, meta)
    for key, (whl, meta) in metas.items():
        if key in CARRIED_WITHOUT_DEPS:
            needs = [Requirement(d) for d in CARRIED_WITHOUT_DEPS[key]]
        else:
            needs = [r for r in map(Requirement, meta.get_all("Requires-Dist") or [])
                     if r.marker is None or r.marker.evaluate(env)]
        for req in needs:
            name = _canon(req.name)
            if name in metas:
                version = metas[name][1]["Version"]
                if req.specifier and not req.specifier.contains(version, prereleases=True):
                    problems.append(f"{whl.name} needs {req}, carried: {version}")
            elif name not in device:
                problems.append(f"{whl.name} needs {req}, which is neither carried nor on the GPU machine")
    return problems


def tree_bytes() -> int:
    """Bytes of the files git tracks (what travels to the GPU machine besides the carried folder)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return -1
    return sum((ROOT / p).stat().st_size for p in out.decode().split("\0") if p and (ROOT / p).is_file())


def cmd_wheels(args) -> int:
    """``make gpu-wheels``: download the carried set for the GPU machine's interpreter."""
    dest = Path(args.dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    wanted = carried_distributions(args.python_version)
    specs = [f"{name}=={version}" for name, version in wanted]
    keep = {(_canon(n), v) for n, v in wanted}
    for whl in dest.glob("*.whl"):  # one version of each: two would stop the install there
        name, version = whl.name.split("-")[:2]
        if (_canon(name), version) not in keep:
            whl.unlink()
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
           args.python_version, "--implementation", "cp", "-d", str(dest), "--progress-bar", "off"]
    for plat in DEVICE_PLATFORMS:
        cmd += ["--platform", plat]
    _say(f"downloading {len(specs)} wheels for CPython {args.python_version} (x86-64 manylinux) into {dest}")
    subprocess.run(cmd + specs, check=True)
    problems = check_wheel_folder(dest, args.python_version)
    wheels = sorted(dest.glob("*.whl"))
    size, tree = sum(w.stat().st_size for w in wheels), tree_bytes()
    for w in wheels:
        _say(f"  {w.stat().st_size / 2**20:7.2f} MiB  {w.name}")
    _say(f"{len(wheels)} wheels, {size / 2**20:.1f} MiB; tracked tree {tree / 2**20:.1f} MiB; together "
         f"{(size + tree) / 2**20:.1f} MiB of the 64 MiB that may travel")
    for p in problems:
        _say(f"problem: {p}")
    if size + tree > 60 * 2**20:
        _say("problem: wheels and tree exceed 60 MiB (the limit is 64 MiB)")
        return 1
    return 1 if problems else 0


# ----------------------------------------------------------------------------------------------
# Stages: a process group with a time limit.
# ----------------------------------------------------------------------------------------------

def _stat(pid) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(pid: int) -> list[tuple[int, str]]:
    """``[(pid, start time)]`` of the processes below ``pid`` (from /proc), also those in sessions
    of their own (a notebook's kernel is started in a new session)."""
    children: dict[int, list[tuple[int, str]]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        fields = _stat(stat.parent.name)
        if fields:
            children.setdefault(int(fields[1]), []).append((int(stat.parent.name), fields[19]))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out


def _kill(procs, sig) -> None:
    """Signal each ``(pid, start time)`` that is still that same process (pids get reused)."""
    for pid, started in procs:
        fields = _stat(pid)
        if fields and fields[19] == started:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def stop_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM to the process group (the CLI then shuts its kernel down); after ``grace``
    seconds, SIGKILL to the group and to every process that was below it."""
    below = descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _kill(below, signal.SIGKILL)
    proc.wait()


def run_limited(cmd, *, env, timeout: float, log_path: Path, cwd: Path = ROOT) -> dict:
    """Run ``cmd`` in its own process group, output appended to ``log_path``; stop it after
    ``timeout`` seconds. Returns ``{status: passed|failed|timed out, rc, seconds, budget_s}``."""
    t0 = time.monotonic()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"$ {' '.join(map(str, cmd))}\n".encode())
        log.flush()
        proc = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = proc.wait(timeout=max(timeout, 0.1))
            status = "passed" if rc == 0 else "failed"
        except subprocess.TimeoutExpired:
            stop_group(proc)
            rc, status = None, "timed out"
    return {"status": status, "rc": rc, "seconds": round(time.monotonic() - t0, 1), "budget_s": round(timeout, 1)}


def fair_share(left_s: float, n_left: int, floor_s: float = 5.0) -> float:
    """The time one of ``n_left`` remaining items may take out of ``left_s`` (0 when too little)."""
    if n_left <= 0:
        return 0.0
    share = left_s / n_left
    return share if share >= floor_s else 0.0


def _tail(path: Path, n_bytes: int) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    text = data[-n_bytes:].decode("utf-8", "replace")
    return ("[... earlier output cut ...]\n" if len(data) > n_bytes else "") + text


# ----------------------------------------------------------------------------------------------
# The probe: what the stage environment imports, from where (run with that environment).
# ----------------------------------------------------------------------------------------------

PROBE_MODULES = {  # module: distribution
    "torch": "torch", "numpy": "numpy", "scipy": "scipy", "sympy": "sympy", "pandas": "pandas",
    "matplotlib": "matplotlib", "seaborn": "seaborn", "sklearn": "scikit-learn", "yaml": "pyyaml",
    "tabulate": "tabulate", "pytest": "pytest", "hypothesis": "hypothesis", "papermill": "papermill",
    "jupytext": "jupytext", "nbformat": "nbformat", "nbclient": "nbclient", "ipykernel": "ipykernel",
    "jupyter_client": "jupyter-client", "zmq": "pyzmq", "IPython": "ipython",
    "matplotlib_inline": "matplotlib-inline", "myst_nb.ext.glue": "myst-nb", "docutils": "docutils",
    "info_nce": "info-nce-pytorch", "infonce_book": "infonce-book",
}


def cmd_probe(args) -> int:
    import importlib
    from importlib import metadata

    site, src = os.environ.get("GPU_CHECK_SITE", "\0"), str(ROOT / "src")

    def origin(path):
        path = str(path or "")
        return "carried" if path.startswith(site) else "src" if path.startswith(src) else "image"

    out = {"python": platform.python_version(), "executable": sys.executable, "platform": platform.platform(),
           "libc": " ".join(platform.libc_ver()), "cpu_count": os.cpu_count(), "modules": {}}
    for mod, dist in PROBE_MODULES.items():
        try:
            m = importlib.import_module(mod)
            try:
                version = metadata.version(dist)
            except metadata.PackageNotFoundError:
                version = getattr(m, "__version__", "?")
            out["modules"][mod] = {"version": version, "origin": origin(getattr(m, "__file__", ""))}
        except Exception as err:  # recorded, not raised
            out["modules"][mod] = {"error": f"{type(err).__name__}: {err}"}
    try:
        import torch

        cuda = torch.cuda.is_available()
        out["torch"] = {"version": torch.__version__, "cuda_build": torch.version.cuda, "cuda_available": cuda,
                        "cudnn": torch.backends.cudnn.version() if cuda else None, "threads": torch.get_num_threads()}
        if cuda:
            props = torch.cuda.get_device_properties(0)
            out["torch"].update(device=props.name, capability=f"{props.major}.{props.minor}",
                                memory_gib=round(props.total_memory / 2**30, 1),
                                multiprocessors=props.multi_processor_count,
                                bf16_supported=torch.cuda.is_bf16_supported())
    except Exception as err:
        out["torch"] = {"error": f"{type(err).__name__}: {err}"}
    # Every carried distribution's requirements, against what this environment has.
    unmet = []
    try:
        from packaging.requirements import Requirement

        py = f"{sys.version_info.major}.{sys.version_info.minor}"
        for dist in metadata.distributions(path=[site]):
            name = _canon(dist.metadata["Name"])
            reqs = ([Requirement(d) for d in CARRIED_WITHOUT_DEPS[name]] if name in CARRIED_WITHOUT_DEPS
                    else _requirements(dist, py))
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
    out["unmet_requirements"] = sorted(set(unmet))
    print(json.dumps(out))
    return 0


# ----------------------------------------------------------------------------------------------
# The direct chapter runner: the chapter's code cells in a plain interpreter (no papermill).
# ----------------------------------------------------------------------------------------------

_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```[ \t]*$", flags=re.S | re.M)


def code_cells(text: str) -> list[tuple[list[str], str]]:
    """``[(tags, source)]`` of a jupytext MyST notebook's code cells (options lines removed)."""
    cells = []
    for body in _CELL.findall(text):
        lines, tags = body.split("\n"), []
        if lines and lines[0].strip() == "---":  # YAML options block
            end = lines.index("---", 1)
            opts, lines = lines[1:end], lines[end + 1:]
            tags = re.findall(r"[\w-]+", " ".join(o for o in opts if o.strip().startswith("tags")))[1:]
        else:
            while lines and lines[0].startswith(":"):
                if lines[0].startswith(":tags:"):
                    tags = re.findall(r"[\w-]+", lines[0][len(":tags:"):])
                lines = lines[1:]
        cells.append((tags, "\n".join(lines).strip("\n")))
    return cells


def _install_stubs() -> None:
    """Outside a notebook there is nothing to glue into or display: ``myst_nb.glue`` only records
    the value, and where IPython is missing (no carried wheels) ``IPython.display``'s objects only
    hold their data and ``get_ipython()`` is None."""
    import types

    myst_nb = types.ModuleType("myst_nb")
    myst_nb.glued = {}

    def glue(name, variable, display=True):
        myst_nb.glued[name] = variable

    myst_nb.glue = glue
    sys.modules["myst_nb"] = myst_nb
    try:
        import IPython.display  # noqa: F401
    except ImportError:
        class Rich:
            def __init__(self, data=None, *args, **kwargs):
                self.data = data

            def __repr__(self):
                return str(self.data)

        ipython = types.ModuleType("IPython")
        display = types.ModuleType("IPython.display")
        display.Math = display.Markdown = display.HTML = display.Latex = Rich
        display.display = lambda *objs, **kwargs: None
        # libraries that look for IPython (matplotlib does) find no running shell
        ipython.display, ipython.get_ipython, ipython.version_info = display, lambda: None, (0, 0, 0, "stub")
        sys.modules.update({"IPython": ipython, "IPython.display": display})


def run_direct(chapter: str, *, profile: str, device: str, seed: int, build_dir: Path, root: Path = ROOT) -> float:
    """Execute ``book/<chapter>.md``'s code cells in this interpreter, parameters set as papermill
    would; ledger records go to ``<build_dir>/ledger/<chapter>.json`` and the time to
    ``<build_dir>/timings.json`` (see :func:`_install_stubs` for glue and display). Returns
    the seconds taken; an exception in a cell propagates (naming the cell)."""
    source = root / "book" / f"{chapter}.md"
    cells = code_cells(source.read_text(encoding="utf-8"))
    if not any("parameters" in tags for tags, _ in cells):
        raise ValueError(f"chapter {chapter}: no code cell tagged 'parameters' in {source}")
    build_dir = Path(build_dir).resolve()
    os.environ.update({"INFONCE_BOOK_ROOT": str(root), "INFONCE_BOOK_BUILD_DIR": str(build_dir),
                       "INFONCE_BOOK_LEDGER_DIR": str(build_dir / "ledger"), "INFONCE_BOOK_NO_PROGRESS": "1",
                       "MPLBACKEND": "Agg"})
    _install_stubs()
    namespace = {"__name__": "__main__"}
    os.chdir(source.parent)
    t0 = time.perf_counter()
    for i, (tags, src) in enumerate(cells):
        if "parameters" in tags:
            src += f"\nprofile = {profile!r}\ndevice = {device!r}\nseed = {int(seed)!r}"
        exec(compile(src, f"<{chapter} cell {i}>", "exec"), namespace)  # the book's own code
        import matplotlib.pyplot as plt

        plt.close("all")
    seconds = time.perf_counter() - t0
    path = build_dir / "timings.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    data.setdefault(profile, {})[chapter] = round(seconds, 2)
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
    return seconds


def cmd_direct_chapter(args) -> int:
    s = run_direct(args.chapter, profile=args.profile, device=args.device, seed=args.seed,
                   build_dir=Path(args.build_dir), root=Path(os.environ.get("INFONCE_BOOK_ROOT", ROOT)).resolve())
    print(f"[{args.chapter}] done in {s:.1f} s (direct runner)", file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------------------------
# The device route.
# ----------------------------------------------------------------------------------------------

def _pyproject_version() -> tuple[str, str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    name = re.search(r'^name\s*=\s*"([^"]+)"', text, flags=re.M).group(1)
    version = re.search(r'^version\s*=\s*"([^"]+)"', text, flags=re.M).group(1)
    return name, version


def _install_wheels(wheels: list[Path], site: Path, env: dict, timeout: float, log: Path) -> dict:
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True)
    result = {"status": "passed", "rc": 0, "seconds": 0.0}
    if wheels:
        result = run_limited([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-compile",
                              "--no-cache-dir", "--disable-pip-version-check", "--quiet", "--target", site, *wheels],
                             env=env, timeout=timeout, log_path=log)
    # The package runs from src/; this dist-info gives it its version (as an editable install would).
    name, version = _pyproject_version()
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text("gpu_check (the package itself runs from src/)\n")
    return result


def _git_commit() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"


def _junit_summary(path: Path) -> dict:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as err:
        return {"error": f"no test report: {err}"}
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    out = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    out["skipped_gpu"] = sum(1 for case in root.iter("testcase") for sk in case.findall("skipped")
                             if "CUDA" in (sk.get("message") or ""))
    return out


class Run:
    """One run of the device route; every stage records into ``self.timings``."""

    def __init__(self, args):
        self.args = args
        self.t0 = time.monotonic()
        self.deadline = self.t0 + args.budget - RESERVE_S
        self.work = Path(args.work).resolve()
        self.out = Path(args.out).resolve()
        self.site, self.build = self.work / "site", self.work / "build"
        self.logs = self.work / "logs"
        self.bench_out = (Path(args.bench_out).resolve() if args.bench_out else
                          ROOT / "benchmarks" / "results" / "cuda" if args.device.startswith("cuda") else
                          self.work / "benchmark")
        self.timings = {"mode": args.mode, "profile": args.profile, "device": args.device, "seed": args.seed,
                        "budget_s": args.budget, "stages": [], "chapters": [], "skipped": []}
        self.environment = {"mode": args.mode, "argv": sys.argv[1:], "commit": _git_commit(),
                            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        self.runner = None
        self.cuda_ok = True
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        extra = os.environ.get("PYTHONPATH")
        env.update({"PYTHONPATH": os.pathsep.join([str(self.site), str(ROOT / "src")] + ([extra] if extra else [])),
                    "GPU_CHECK_SITE": str(self.site), "INFONCE_BOOK_ROOT": str(ROOT),
                    "INFONCE_BOOK_NO_PROGRESS": "1", "INFONCE_BOOK_CACHE_DIR": str(self.work / "cache"),
                    "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg",
                    "JUPYTER_RUNTIME_DIR": str(self.work / "jupyter-runtime"),
                    "IPYTHONDIR": str(self.work / "ipython")})
        env.pop("INFONCE_BOOK_LEDGER_DIR", None)
        env.pop("INFONCE_BOOK_BUILD_DIR", None)
        self.env = env

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def budget(self, stage: str) -> float:
        """The stage's budget, scaled with the run's (a rehearsal on a shared CPU gets more time)."""
        scale = max(1.0, self.args.budget / DEVICE_BUDGET_S)
        return min(STAGE_BUDGET_S.get(stage, 1e9) * scale, self.left())

    def record(self, name: str, result: dict, note: str = "") -> dict:
        entry = {"name": name, **result}
        if note:
            entry["note"] = note
        self.timings["stages"].append(entry)
        _say(f"=== {name}: {entry['status']} ({entry.get('seconds', 0):.0f} s of {entry.get('budget_s', 0):.0f})"
             + (f" - {note}" if note else ""))
        return entry

    def skip(self, name: str, why: str) -> None:
        self.timings["skipped"].append(f"{name}: {why}")
        self.record(name, {"status": "skipped", "seconds": 0.0, "budget_s": 0.0}, why)

    # -- stages --------------------------------------------------------------------------------

    def stage_setup(self) -> None:
        t0 = time.monotonic()
        budget = self.budget("setup")
        log = self.logs / "setup.log"
        smi = shutil.which("nvidia-smi")
        if smi:
            try:
                self.environment["nvidia_smi"] = subprocess.run([smi], capture_output=True, text=True,
                                                                timeout=30).stdout
            except (OSError, subprocess.SubprocessError) as err:
                self.environment["nvidia_smi"] = f"failed: {err}"
        else:
            self.environment["nvidia_smi"] = "not found"
        wheel_dir = Path(self.args.wheels).resolve()
        wheels = sorted(wheel_dir.glob("*.whl"))
        self.environment["wheels"] = {"folder": str(wheel_dir), "count": len(wheels),
                                      "mib": round(sum(w.stat().st_size for w in wheels) / 2**20, 2),
                                      "files": [w.name for w in wheels]}
        inst = _install_wheels(wheels, self.site, self.env, budget, log)
        notes = [] if wheels else [f"no carried wheels in {wheel_dir} (run `make gpu-wheels` where pip works)"]
        if inst["status"] != "passed":
            notes.append(f"installing the carried wheels {inst['status']} (see log)")
        probe = subprocess.run([sys.executable, __file__, "probe"], env=self.env, cwd=ROOT, capture_output=True,
                               text=True, timeout=max(budget - (time.monotonic() - t0), 10))
        with open(log, "a") as fh:
            fh.write(probe.stderr)
        try:
            self.environment["probe"] = json.loads(probe.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            self.environment["probe"] = {"error": probe.stdout[-2000:] + probe.stderr[-2000:]}
        mods = self.environment["probe"].get("modules", {})
        missing = [m for m in NOTEBOOK_MODULES if "error" in mods.get(m, {"error": "?"})]
        self.runner = self.args.runner if self.args.runner != "auto" else ("direct" if missing else "papermill")
        if missing:
            notes.append(f"not importable: {', '.join(missing)}; chapters run through the direct runner")
        self.environment["chapter_runner"] = self.runner
        status = "passed"
        for mod in ("torch", "infonce_book"):
            if "error" in mods.get(mod, {"error": "?"}):
                status = "failed"
                notes.append(f"{mod} does not import: {mods.get(mod, {}).get('error')}")
        torch_info = self.environment["probe"].get("torch", {})
        if self.args.device.startswith("cuda") and not torch_info.get("cuda_available"):
            status, self.cuda_ok = "failed", False
            notes.append("torch sees no CUDA device")
        unmet = self.environment["probe"].get("unmet_requirements", [])
        if unmet:
            notes.append(f"{len(unmet)} unmet requirement(s) of carried wheels (environment.json)")
        if inst["status"] != "passed" or (missing and wheels):
            status = "failed"
        self.record("setup", {"status": status, "seconds": round(time.monotonic() - t0, 1), "budget_s": round(budget)},
                    "; ".join(notes))

    def stage_tests(self) -> None:
        budget = self.budget("tests")
        if budget < 10:
            return self.skip("tests", "no time left")
        report = self.work / "tests.xml"
        report.unlink(missing_ok=True)
        files = self.args.test_files or list(TEST_FILES)
        res = run_limited([sys.executable, "-m", "pytest", *files, "-q", "-rs", "-p", "no:cacheprovider",
                           f"--junitxml={report}", "-o", "junit_family=xunit2"],
                          env=self.env, timeout=budget, log_path=self.logs / "tests.log")
        summary = _junit_summary(report)
        note = ", ".join(f"{k} {v}" for k, v in summary.items())
        if self.args.device.startswith("cuda") and summary.get("skipped_gpu"):
            res["status"] = "failed"
            note += "; GPU tests were skipped on the GPU machine"
        res["tests"] = summary
        self.record("tests", res, note)

    def stage_benchmark(self) -> None:
        budget = self.budget("benchmark")
        if budget < 20:
            return self.skip("benchmark", "no time left")
        dev = "cuda" if self.args.device.startswith("cuda") else "cpu"
        args = self.args.bench_args.split() if self.args.bench_args else BENCH_ARGS[dev]
        res = run_limited([sys.executable, ROOT / "benchmarks" / "bench_infonce.py", "--device", self.args.device,
                           "--out", self.bench_out, *args],
                          env=self.env, timeout=budget, log_path=self.logs / "benchmark.log")
        self.record("benchmark", res, f"results in {self.bench_out}")

    def stage_chapters(self) -> None:
        t0, budget = time.monotonic(), self.left()
        listing = subprocess.run([sys.executable, "-m", "infonce_book", "chapters"], env=self.env, cwd=ROOT,
                                 capture_output=True, text=True, timeout=120)
        known = [line.split("\t")[0] for line in listing.stdout.splitlines() if line.strip()]
        chapters = self.args.chapters.split(",") if self.args.chapters else known
        if not chapters:
            self.record("chapters", {"status": "failed", "seconds": 0.0, "budget_s": 0.0},
                        f"no chapters listed: {listing.stderr[-500:]}")
            return
        shutil.rmtree(self.build, ignore_errors=True)
        (self.build / "ledger").mkdir(parents=True)
        results = {}
        for i, chapter in enumerate(chapters):
            results[chapter] = self._chapter(chapter, fair_share(self.left(), len(chapters) - i), attempt=1)
        # A second try for chapters stopped at their share, with the time the others left over:
        # their finished experiment tables are in the cache (keyed by configuration and src/), so
        # the new attempt goes on where the first one stopped.
        again = [c for c in chapters if results[c]["status"] == "timed out"]
        for i, chapter in enumerate(again):
            share = fair_share(self.left(), len(again) - i, floor_s=30.0)
            if share:
                results[chapter] = self._chapter(chapter, share, attempt=2)
        for chapter in chapters:
            res = results[chapter]
            self.timings["chapters"].append(res)
            if res["status"] == "skipped":
                self.timings["skipped"].append(f"chapter {chapter}: no time left")
            elif res["status"] == "timed out":
                self.timings["skipped"].append(f"chapter {chapter}: stopped after {res['seconds']:.0f} s "
                                               f"(attempt {res['attempt']})")
        statuses = [results[c]["status"] for c in chapters]
        status = "passed" if all(s == "passed" for s in statuses) else (
            "failed" if "failed" in statuses else "timed out")
        self.record("chapters", {"status": status, "seconds": round(time.monotonic() - t0, 1),
                                 "budget_s": round(budget)},
                    ", ".join(f"{c} {s}" for c, s in zip(chapters, statuses)))

    def _chapter(self, chapter: str, share: float, attempt: int) -> dict:
        """Run one chapter within ``share`` seconds (0: skipped); its result for ``timings``."""
        if share == 0:
            return {"chapter": chapter, "status": "skipped", "seconds": 0.0, "budget_s": 0.0,
                    "runner": self.runner, "attempt": attempt, "records": 0, "records_failed": 0}
        if self.runner == "papermill":
            cmd = [sys.executable, "-m", "infonce_book", "run", chapter, "--force"]
        else:
            cmd = [sys.executable, __file__, "direct-chapter", chapter]
        cmd += ["--profile", self.args.profile, "--device", self.args.device, "--seed", str(self.args.seed),
                "--build-dir", self.build]
        _say(f"--- {chapter}: {self.runner}, up to {share:.0f} s" + (f" (attempt {attempt})" if attempt > 1 else ""))
        res = run_limited(cmd, env=self.env, timeout=share, log_path=self.logs / f"chapter-{chapter}.log")
        ledger = self.build / "ledger" / f"{chapter}.json"
        if res["status"] != "passed":
            ledger.unlink(missing_ok=True)  # no records of a run that did not finish
        records = json.loads(ledger.read_text()) if ledger.is_file() else []
        res.update(chapter=chapter, runner=self.runner, attempt=attempt, records=len(records),
                   records_failed=sum(not r["passed"] for r in records))
        _say(f"    {chapter}: {res['status']} in {res['seconds']:.0f} s, {len(records)} ledger records"
             + (f", {res['records_failed']} failed" if res["records_failed"] else ""))
        return res

    # -- the bundle ----------------------------------------------------------------------------

    def write_bundle(self) -> list[Path]:
        self.out.mkdir(parents=True, exist_ok=True)
        for name in BUNDLE:
            (self.out / name).unlink(missing_ok=True)
        self.timings["total_s"] = round(time.monotonic() - self.t0, 1)
        self.environment["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        pipeline_timings = self.build / "timings.json"
        if pipeline_timings.is_file():
            self.timings["notebook_seconds"] = json.loads(pipeline_timings.read_text())
        records = []
        for p in sorted((self.build / "ledger").glob("*.json")):
            records.extend(json.loads(p.read_text()))
        files = {"environment.json": json.dumps(self.environment, indent=2),
                 "timings.json": json.dumps(self.timings, indent=2),
                 "ledger.json": json.dumps(records, indent=2)}
        for name, text in files.items():
            (self.out / name).write_text(text + "\n")
        for src, name in ((self.work / "tests.xml", "tests.xml"), (self.bench_out / "results.csv", "benchmark.csv"),
                          (self.bench_out / "results.md", "benchmark.md"),
                          (self.bench_out / "throughput.png", "benchmark.png")):
            if src.is_file() and src.stat().st_mtime >= self.start_wall:
                shutil.copyfile(src, self.out / name)
        parts = []
        for log in sorted(self.logs.glob("*.log"), key=lambda p: p.stat().st_mtime):
            parts.append(f"===== {log.name}\n{_tail(log, 200_000)}")
        (self.out / "log.txt").write_text("\n".join(parts))
        written = [self.out / n for n in BUNDLE if (self.out / n).is_file()]
        assert len(written) <= 8
        return written

    def execute(self) -> int:
        self.start_wall = time.time()
        for folder in (self.logs, self.work / "cache"):  # nothing from an earlier run is reused
            shutil.rmtree(folder, ignore_errors=True)
        self.logs.mkdir(parents=True)
        stages = ["setup"] + (self.args.stages.split(",") if self.args.stages else list(STAGES[1:]))
        try:
            self.stage_setup()
            for stage in ("tests", "benchmark", "chapters"):
                if stage not in stages:
                    self.skip(stage, "not asked for (--stages)")
                elif not self.cuda_ok:
                    self.skip(stage, "torch sees no CUDA device")
                else:
                    getattr(self, f"stage_{stage}")()
        except KeyboardInterrupt:
            self.timings["skipped"].append("interrupted")
        except Exception as err:  # the bundle is written whatever happened
            self.timings["skipped"].append(f"orchestrator error: {type(err).__name__}: {err}")
            self.timings.setdefault("errors", []).append(f"{type(err).__name__}: {err}")
        finally:
            written = self.write_bundle()
        ok = all(s["status"] == "passed" for s in self.timings["stages"] if s["name"] in stages)
        ok = ok and not self.timings.get("errors") and len(self.timings["stages"]) == len(STAGES)
        _say(f"--- bundle ({len(written)} files) in {self.out}: {', '.join(p.name for p in written)}")
        for s in self.timings["stages"]:
            _say(f"  {s['name']:<10} {s['status']:<10} {s.get('seconds', 0):6.0f} s")
        for c in self.timings["chapters"]:
            _say(f"    {c['chapter']:<20} {c['status']:<10} {c.get('seconds', 0):6.0f} s  {c.get('records', 0)} records")
        for s in self.timings["skipped"]:
            _say(f"  skipped: {s}")
        _say(f"--- total {self.timings['total_s']:.0f} s of {self.args.budget} s: "
             + ("all stages passed" if ok else "NOT all stages passed"))
        return 0 if ok else 1


def cmd_run(args) -> int:
    return Run(args).execute()


# ----------------------------------------------------------------------------------------------
# The rehearsal (a CPU machine, offline).
# ----------------------------------------------------------------------------------------------

def _dist_info_dir(dist) -> str:
    for f in dist.files or []:
        if f.name == "METADATA" and f.parent.name.endswith(".dist-info"):
            return str(f.parent)
    raise ValueError(f"{dist.metadata['Name']}: no .dist-info in its RECORD")


def wheel_from_installed(dist, dest: Path) -> Path:
    """Rebuild a wheel from an installed distribution's files (its RECORD), for a rehearsal that
    may not download anything: the files inside site-packages, a fresh RECORD, the WHEEL tag."""
    info = _dist_info_dir(dist)
    wheel_meta = dist.read_text("WHEEL") or ""
    tags = [t.split("-") for t in re.findall(r"^Tag:\s*(\S+)", wheel_meta, flags=re.M)] or [["py3", "none", "any"]]
    # the compressed tag set: py2.py3-none-any, cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64
    tag = "-".join(".".join(dict.fromkeys(t[i] for t in tags)) for i in range(3))
    path = Path(dest) / f"{info[: -len('.dist-info')]}-{tag}.whl"
    rows = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for f in dist.files:
            arc = f.as_posix()
            if (arc.startswith("..") or "__pycache__" in f.parts or arc.endswith(".pyc")
                    or arc in {f"{info}/RECORD", f"{info}/INSTALLER", f"{info}/REQUESTED", f"{info}/direct_url.json"}):
                continue
            src = Path(f.locate())
            if not src.is_file():
                continue
            data = src.read_bytes()
            z.writestr(arc, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            rows.append(f"{arc},sha256={digest},{len(data)}")
        rows.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(rows) + "\n")
    return path


def build_standin(dest: Path, carried: set[str]) -> Path:
    """A virtual environment (this interpreter's base Python) whose site-packages links only the
    distributions of this environment that the GPU machine has (``DEVICE_PACKAGES`` and what they
    require here), never a carried one nor the project itself. Returns its python."""
    from importlib import metadata

    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    shutil.rmtree(dest, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    site = dest / "lib" / f"python{py}" / "site-packages"
    dists = {}
    for d in metadata.distributions():
        dists.setdefault(_canon(d.metadata["Name"]), d)
    allowed, todo = set(), [n for n in map(_canon, DEVICE_PACKAGES) if n in dists]
    while todo:
        name = todo.pop()
        if name in allowed or name in carried or name not in dists:
            continue
        allowed.add(name)
        todo += [_canon(r.name) for r in _requirements(dists[name], py)]
    allowed.discard(_canon(_pyproject_version()[0]))
    files_ok, files_denied = set(), set()
    for name, d in dists.items():
        for f in d.files or []:
            if not f.as_posix().startswith(".."):
                (files_ok if name in allowed else files_denied).add(f.parts)
    denied_prefixes = {parts[:i] for parts in files_denied for i in range(1, len(parts))}
    source = Path(sysconfig_purelib())
    linked = set()
    for parts in sorted(files_ok):
        # the shortest prefix of this file that holds no file of a hidden distribution
        for i in range(1, len(parts) + 1):
            prefix = parts[:i]
            if prefix in linked:
                break
            if i == len(parts) or prefix not in denied_prefixes:
                target = site.joinpath(*prefix)
                target.parent.mkdir(parents=True, exist_ok=True)
                if (source.joinpath(*prefix)).exists() and not target.exists():
                    target.symlink_to(source.joinpath(*prefix))
                linked.add(prefix)
                break
    return dest / "bin" / "python"


def sysconfig_purelib() -> str:
    import sysconfig

    return sysconfig.get_paths()["purelib"]


def check_bundle(out: Path, chapters: list[str], *, runner: str = "papermill", peer: bool = True,
                 no_claims: frozenset[str] = frozenset()) -> list[str]:
    """What a rehearsal's bundle lacks (an empty list when it is complete); ``peer``: whether the
    benchmark's peer library was carried; ``no_claims``: executed pages that record no claims (the
    back matter, e.g. the robustness page), which need no ledger records."""
    problems = []
    names = sorted(p.name for p in Path(out).iterdir() if p.is_file() and p.name in BUNDLE)
    if len(names) > 8:
        problems.append(f"{len(names)} files in the bundle (at most 8)")
    for name in BUNDLE:
        if name not in names:
            problems.append(f"missing {name}")
    try:
        timings = json.loads((out / "timings.json").read_text())
        env = json.loads((out / "environment.json").read_text())
        ledger = json.loads((out / "ledger.json").read_text())
    except (OSError, json.JSONDecodeError) as err:
        return problems + [f"unreadable bundle: {err}"]
    for stage in timings["stages"]:
        if stage["status"] != "passed":
            problems.append(f"stage {stage['name']}: {stage['status']} ({stage.get('note', '')})")
    if [s["name"] for s in timings["stages"]] != list(STAGES):
        problems.append(f"stages {[s['name'] for s in timings['stages']]}, expected {list(STAGES)}")
    ran = {c["chapter"]: c for c in timings["chapters"]}
    for chapter in chapters:
        c = ran.get(chapter)
        if c is None or c["status"] != "passed" or c["runner"] != runner:
            problems.append(f"chapter {chapter}: {c}")
    with_records = {r["chapter"] for r in ledger}
    for chapter in chapters:
        if chapter not in with_records and chapter not in no_claims:
            problems.append(f"no ledger records of {chapter}")
    mods = env.get("probe", {}).get("modules", {})
    for mod in ("papermill", "jupytext", "nbformat", "nbclient", "ipykernel", "myst_nb.ext.glue") + (
            ("info_nce",) if peer else ()):
        if mods.get(mod, {}).get("origin") != "carried":
            problems.append(f"{mod} not loaded from the carried wheels: {mods.get(mod)}")
    for mod in ("torch", "numpy", "pandas", "pytest"):
        if mods.get(mod, {}).get("origin") != "image":
            problems.append(f"{mod} not loaded from the interpreter's own packages: {mods.get(mod)}")
    if mods.get("infonce_book", {}).get("origin") != "src":
        problems.append(f"infonce_book not loaded from src/: {mods.get('infonce_book')}")
    if env.get("probe", {}).get("unmet_requirements"):
        problems.append(f"unmet requirements: {env['probe']['unmet_requirements']}")
    tests = timings["stages"][1].get("tests", {}) if len(timings["stages"]) > 1 else {}
    if not tests.get("tests") or tests.get("failures") or tests.get("errors"):
        problems.append(f"test report: {tests}")
    return problems


def cmd_rehearse(args) -> int:
    from importlib import metadata

    t0 = time.monotonic()
    work = Path(args.work).resolve() / "rehearse"
    out = Path(args.out).resolve()
    os.environ["PIP_NO_INDEX"] = "1"  # any registry download fails
    os.environ["PIP_CONFIG_FILE"] = os.devnull  # no local index or wheel folder from pip's configuration
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    carried = carried_distributions(py, optional=False)
    _say(f"[rehearse] {len(carried)} carried distributions (for Python {py}): "
         + ", ".join(f"{n} {v}" for n, v in carried))
    if args.wheels:  # carried wheels made for this interpreter (e.g. `make gpu-wheels` under Python 3.12)
        wheels = Path(args.wheels).resolve()
    else:
        wheels = work / "wheels"
        shutil.rmtree(wheels, ignore_errors=True)
        wheels.mkdir(parents=True)
        for name, _version in carried:
            wheel_from_installed(metadata.distribution(name), wheels)
    problems = check_wheel_folder(wheels, py)
    standin = build_standin(work / "python", {_canon(n) for n, _ in carried})
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PYTHONNOUSERSITE"] = "1"
    # Isolation: without the carried wheels, the stand-in cannot run a chapter.
    iso = subprocess.run([str(standin), "-c", "import importlib.util as u, sys; "
                          "sys.exit(0 if any(u.find_spec(m) for m in ('papermill', 'nbclient', 'ipykernel', "
                          "'myst_nb', 'info_nce', 'infonce_book')) else 3)"],
                         env=env, cwd="/", capture_output=True, text=True)
    if iso.returncode != 3:
        problems.append(f"the stand-in interpreter is not isolated: {iso.stdout} {iso.stderr}")
    probe_torch = subprocess.run([str(standin), "-c", "import torch, numpy, pandas, pytest"], env=env, cwd="/",
                                 capture_output=True, text=True)
    if probe_torch.returncode:
        problems.append(f"the stand-in lacks the image's packages: {probe_torch.stderr[-500:]}")
    _say(f"[rehearse] stand-in interpreter {standin}, {len(list(wheels.glob('*.whl')))} wheels "
         f"({sum(w.stat().st_size for w in wheels.glob('*.whl')) / 2**20:.1f} MiB) in {wheels}; "
         f"prepared in {time.monotonic() - t0:.0f} s")
    cmd = [str(standin), __file__, "run", "--mode", "rehearsal", "--profile", args.profile, "--device", args.device,
           "--wheels", str(wheels), "--work", str(work / "run"), "--out", str(out), "--budget", str(args.budget)]
    for opt in ("chapters", "stages"):
        if getattr(args, opt):
            cmd += [f"--{opt}", getattr(args, opt)]
    rc = subprocess.run(cmd, env=env, cwd=ROOT).returncode
    listing = [line.split("\t") for line in subprocess.run(
        [sys.executable, "-m", "infonce_book", "chapters"], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")}).stdout.splitlines() if line.strip()]
    chapters = args.chapters.split(",") if args.chapters else [row[0] for row in listing]
    no_claims = frozenset(row[0] for row in listing if row[-1] == "back matter")
    if not args.stages:
        problems += check_bundle(out, chapters, peer=any(_canon(n) == "info-nce-pytorch" for n, _ in carried),
                                 no_claims=no_claims)
    if rc:
        problems.append(f"the run exited {rc}")
    for p in problems:
        _say(f"[rehearse] problem: {p}")
    _say(f"[rehearse] {'passed' if not problems else 'FAILED'} in {time.monotonic() - t0:.0f} s; bundle in {out}")
    return 1 if problems else 0


# ----------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].startswith("-"):
        argv.insert(0, "rehearse" if "--rehearse" in argv else "run")
        if "--rehearse" in argv:
            argv.remove("--rehearse")
    ap = argparse.ArgumentParser(prog="gpu_check.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    default_out = os.environ.get("OUT") or str(DEFAULT_WORK)

    def common(sp, profile, device, budget):
        sp.add_argument("--profile", default=profile, choices=("smoke", "standard", "full"))
        sp.add_argument("--device", default=device, help="cuda (default on the GPU machine), cpu or auto")
        sp.add_argument("--seed", type=int, default=0)
        sp.add_argument("--out", default=default_out, help="bundle folder (default: $OUT, else _build/gpu_check)")
        sp.add_argument("--work", default=str(DEFAULT_WORK / "work"), help="scratch folder")
        sp.add_argument("--budget", type=float, default=budget, help="seconds for the whole run")
        sp.add_argument("--chapters", default=None, help="comma-separated subset (default: every chapter)")
        sp.add_argument("--stages", default=None, help=f"comma-separated subset of {','.join(STAGES[1:])} "
                                                       "(setup always runs)")

    r = sub.add_parser("run", help="the device route (default)")
    common(r, "full", "cuda", DEVICE_BUDGET_S)
    r.add_argument("--mode", default="device", choices=("device", "rehearsal"))
    r.add_argument("--wheels", default=str(DEFAULT_WHEELS), help="folder of carried wheels")
    r.add_argument("--runner", default="auto", choices=("auto", "papermill", "direct"))
    r.add_argument("--bench-out", default=None, help="benchmark folder (default benchmarks/results/cuda on a GPU)")
    r.add_argument("--bench-args", default=None, help="benchmark options instead of the default grid")
    r.add_argument("--test-files", nargs="*", default=None, help=argparse.SUPPRESS)
    rh = sub.add_parser("rehearse", help="the same route on a CPU machine, offline (--rehearse)")
    # The rehearsal's budget only guards against a hang: on a busy shared CPU the smoke profile can
    # take several times its quiet-machine time. Stage budgets scale with it.
    common(rh, "smoke", "cpu", 2400)
    rh.add_argument("--wheels", default=None, help="use these wheels (for this interpreter) instead of "
                                                   "rebuilding them from the environment's installed copies")
    w = sub.add_parser("wheels", help="download the carried wheels (make gpu-wheels)")
    w.add_argument("--dest", default=str(DEFAULT_WHEELS))
    w.add_argument("--python-version", default=DEVICE_PYTHON)
    c = sub.add_parser("carried", help="list the carried distributions")
    c.add_argument("--python-version", default=DEVICE_PYTHON)
    sub.add_parser("probe", help=argparse.SUPPRESS)
    d = sub.add_parser("direct-chapter", help="run one chapter's code cells without papermill")
    d.add_argument("chapter")
    d.add_argument("--profile", default="full")
    d.add_argument("--device", default="auto")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--build-dir", default=str(DEFAULT_WORK / "work" / "build"))
    args = ap.parse_args(argv)
    if args.command == "carried":
        for name, version in carried_distributions(args.python_version):
            print(f"{name}=={version}")
        return 0
    return {"run": cmd_run, "rehearse": cmd_rehearse, "wheels": cmd_wheels, "probe": cmd_probe,
            "direct-chapter": cmd_direct_chapter}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
