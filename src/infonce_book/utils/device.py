"""Device selection: ``auto`` picks CUDA when present, else the CPU; :func:`one_thread` for small
CPU work."""

from __future__ import annotations

import contextlib
import functools

import torch

DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """Return the torch device for ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    Raises:
        ValueError: an unknown device name, or ``cuda`` requested on a machine without a GPU.
    """
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise TypeError(f"device must be one of {list(DEVICES)} (or 'cuda:N'), got {device!r}")
    name = device.strip().lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda" or name.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={device!r} was requested but no CUDA GPU is available on this machine "
                f"(torch {torch.__version__}, cuda build: {torch.version.cuda}); use device='cpu' or 'auto'"
            )
        return torch.device(name)
    raise ValueError(f"device must be one of {list(DEVICES)} (or 'cuda:N'), got device={device!r}")


def describe(device: torch.device) -> str:
    """A one-line human description of ``device`` (GPU name where there is one)."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return "cpu"


@contextlib.contextmanager
def one_thread(device=None):
    """Run the enclosed torch code on one CPU thread, then restore the previous setting; on a GPU
    ``device`` (a name or a ``torch.device``) nothing changes.

    For the many small operations of training small models: on a 2-core machine shared with other
    jobs, two intra-op threads that wait for each other cost several times the CPU time of one
    (measured on Chapter 3's batched linear fits: 4.7 s of CPU time on one thread, 35 s on
    two; on a C5 training cell: 60 s of wall time with two threads, 10 s with one).
    """
    if device is not None and resolve_device(device).type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def on_one_cpu_thread(fn):
    """Decorator: run a runner (called with keyword arguments, one of them ``device``) under
    :func:`one_thread` for its device."""

    @functools.wraps(fn)
    def inner(*args, **kwargs):
        with one_thread(kwargs.get("device", "cpu")):
            return fn(*args, **kwargs)

    return inner
