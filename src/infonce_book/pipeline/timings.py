"""Chapter times: the recorded ones (:data:`TIMES_FILE`, written by ``make timings``:
``benchmarks/chapter_times.py``, which also writes the README's table), which every page's rerun box
quotes; and each build folder's own (``<build>/timings.json``). Standard library only.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..experiment.paths import atomic_write_text

TIMES_FILE = Path("benchmarks") / "results" / "cpu" / "chapter_times.json"
RECORDED_PROFILES = ("smoke", "standard")


def read_json(path: Path) -> dict:
    """A JSON file's content, ``{}`` when there is no such file."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def load_recorded(root: Path) -> dict:
    """The recorded times (:data:`TIMES_FILE` under ``root``), or ``{}`` if there are none."""
    return read_json(Path(root) / TIMES_FILE)


def load_timings(build_dir: Path) -> dict[str, dict[str, float]]:
    """``{profile: {chapter: seconds}}`` from ``<build>/timings.json`` (empty if absent)."""
    return read_json(Path(build_dir) / "timings.json")


def fmt_seconds(s: float | None, missing: str = "not recorded") -> str:
    """``42 s`` below two minutes, else ``3.5 min``; ``missing`` for a time not recorded (yet)."""
    if s is None:
        return missing
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


def seconds_of(recorded: dict, profile: str, chapter: str) -> float | None:
    """The recorded seconds of ``chapter`` at ``profile`` (``None`` if not recorded)."""
    return recorded.get("profiles", {}).get(profile, {}).get("seconds", {}).get(chapter)


def record_timing(build_dir: Path, stem: str, profile: str, seconds: float) -> None:
    """Put one chapter run's execution time into ``<build_dir>/timings.json`` (``{profile: {stem:
    seconds}}``, rounded to 0.01 s; the rerun boxes and the GPU check's bundle read it)."""
    data = load_timings(build_dir)
    data.setdefault(profile, {})[stem] = round(seconds, 2)
    atomic_write_text(Path(build_dir) / "timings.json", json.dumps(data, indent=2, sort_keys=True))
