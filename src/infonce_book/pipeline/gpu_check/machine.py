"""What the offline GPU machine has and allows, and what the check carries, runs and returns.

The GPU machine this project can use is offline, runs one command of at most 10 minutes and returns
at most 8 files. Its ``python3`` has torch (2.11, CUDA) and the scientific stack
(:data:`DEVICE_PACKAGES`) but not the notebook tool chain, which travels as wheels
(:data:`CARRIED_ROOTS`, :data:`CARRIED_WITHOUT_DEPS`, :data:`OPTIONAL_ROOTS`). The check runs the
:data:`STAGES` within :data:`DEVICE_BUDGET_S` and writes the :data:`BUNDLE`.

Standard library only: the check imports this before any wheel is installed.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["BENCH_ARGS", "BUNDLE", "CARRIED_ROOTS", "CARRIED_WITHOUT_DEPS", "DEFAULT_WHEELS", "DEFAULT_WORK",
           "DEVICE_BUDGET_S", "DEVICE_PACKAGES", "DEVICE_PLATFORMS", "DEVICE_PYTHON", "NOTEBOOK_MODULES",
           "OPTIONAL_ROOTS", "RESERVE_S", "ROOT", "STAGES", "STAGE_BUDGET_S", "TEST_FILES", "canon", "project_name_version", "say"]

#: The source tree the check runs from (it is never installed on the GPU machine: the package runs
#: from ``src/``, next to ``scripts/gpu_check.sh``).
ROOT = Path(__file__).resolve().parents[4]
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
TEST_FILES = ("tests/utils/test_device.py", "tests/losses/test_losses.py", "tests/losses/test_on_device.py",
              "tests/losses/test_host_reads.py")
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


def canon(name: str) -> str:
    """A distribution name in its canonical form (PEP 503: lower case, runs of ``-_.`` as ``-``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def say(msg: str) -> None:
    """Print a line of the check's log at once (the device tool returns the output's tail)."""
    print(msg, flush=True)


def project_name_version(root: Path = ROOT) -> tuple[str, str]:
    """The project's distribution name and version, read from ``pyproject.toml`` (no TOML parser
    needed: Python 3.10 has none)."""
    text = (Path(root) / "pyproject.toml").read_text(encoding="utf-8")
    name = re.search(r'^name\s*=\s*"([^"]+)"', text, flags=re.M).group(1)
    version = re.search(r'^version\s*=\s*"([^"]+)"', text, flags=re.M).group(1)
    return name, version
