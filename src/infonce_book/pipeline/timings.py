"""Recorded chapter times: one file (:data:`TIMES_FILE`, written by ``infonce-book timings record``:
:func:`infonce_book.pipeline.run.record_timings`) that the README's table (:func:`update_readme`) and
every page's rerun box read; and each build folder's own times (``<build>/timings.json``). Standard
library only: the light commands import it.
"""

from __future__ import annotations

import json
import os
import platform
import re
from pathlib import Path

from ..experiment.paths import atomic_write_text

TIMES_FILE = Path("benchmarks") / "results" / "cpu" / "chapter_times.json"
RECORDED_PROFILES = ("smoke", "standard")
README_START = "<!-- infonce-book: chapter-times -->"
README_END = "<!-- /infonce-book: chapter-times -->"


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


def readme_table(recorded: dict, chapters: list[str]) -> str:
    """The README's table of chapter times (markdown), and where, when and under which load the
    times were recorded."""
    lines = ["| chapter | " + " | ".join(f"`{p}`" for p in RECORDED_PROFILES) + " |",
             "|---|" + "---|" * len(RECORDED_PROFILES)]
    for stem in chapters:
        lines.append(f"| `{stem}` | " + " | ".join(fmt_seconds(seconds_of(recorded, p, stem))
                                                  for p in RECORDED_PROFILES) + " |")
    columns = [[seconds_of(recorded, p, stem) for stem in chapters] for p in RECORDED_PROFILES]
    lines.append("| all chapters | " + " | ".join(fmt_seconds(sum(c)) if c and None not in c else "not recorded"
                                                  for c in columns) + " |")
    m, threads = recorded.get("machine", {}), recorded.get("threads", {})
    where = [f"{m.get('cpu', 'unknown CPU')}, {m.get('cores', '?')} cores, Python {m.get('python', '?')}, "
             f"torch {m.get('torch', '?')}, kernel threads {threads.get('OMP_NUM_THREADS', '?')} "
             f"(wait policy {threads.get('OMP_WAIT_POLICY', '?')})"]
    for p in RECORDED_PROFILES:
        rec = recorded.get("profiles", {}).get(p)
        if rec:
            load = rec.get("load_average", {})
            where.append(f"`{p}` recorded {rec.get('recorded', '?')} at commit `{rec.get('commit', '?')}`, "
                         f"1-minute load average {load.get('before', '?')} before and {load.get('after', '?')} after")
    return ("\n".join(lines) + f"\n\nMeasured by `infonce-book timings record` ({TIMES_FILE.as_posix()}): "
            f"{'; '.join(where)}. A load average above the number of cores means other processes "
            f"shared the CPU.")


def readme_block(recorded: dict, chapters: list[str]) -> str:
    return f"{README_START}\n{readme_table(recorded, chapters)}\n{README_END}"


def update_readme(root: Path, chapters: list[str]) -> bool:
    """Rewrite the README's table between its markers from :data:`TIMES_FILE`; True if changed
    (``ValueError`` if the README lacks the markers)."""
    path = Path(root) / "README.md"
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(README_START) + r".*?" + re.escape(README_END), flags=re.S)
    if not pattern.search(text):
        raise ValueError(f"README.md lacks the markers {README_START} ... {README_END}")
    new = pattern.sub(lambda m: readme_block(load_recorded(root), chapters), text)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def record_timing(build_dir: Path, stem: str, profile: str, seconds: float) -> None:
    """Put one chapter run's execution time into ``<build_dir>/timings.json`` (``{profile: {stem:
    seconds}}``, rounded to 0.01 s; the rerun boxes and the GPU check's bundle read it)."""
    data = load_timings(build_dir)
    data.setdefault(profile, {})[stem] = round(seconds, 2)
    atomic_write_text(Path(build_dir) / "timings.json", json.dumps(data, indent=2, sort_keys=True))
