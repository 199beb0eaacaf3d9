"""The bottom layer: argument validation, device selection and progress bars, used by every
other layer (and by nothing they define)."""

from .device import DEVICES, describe, resolve_device
from .progress import progress, progress_enabled

__all__ = ["DEVICES", "describe", "resolve_device", "progress", "progress_enabled"]
