"""The chapters' execution times: every chapter run at the smoke and standard profiles on the CPU
(forced, each profile in a fresh build folder, so with an empty experiment cache), written to
``benchmarks/results/cpu/chapter_times.json``, which every page's rerun box quotes, and to the
README's table (between its ``chapter-times`` markers).

    python benchmarks/chapter_times.py record   # (make timings) measure, then rewrite the table
    python benchmarks/chapter_times.py readme   # only rewrite the README's table from the file

Run it on a quiet machine: the file records the load average before and after each profile.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from infonce_book.experiment.paths import atomic_write_text, git_commit, project_root
from infonce_book.pipeline.pages import executable_pages
from infonce_book.pipeline.timings import RECORDED_PROFILES, TIMES_FILE, fmt_seconds, load_recorded, seconds_of

README_START = "<!-- infonce-book: chapter-times -->"
README_END = "<!-- /infonce-book: chapter-times -->"


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
    return ("\n".join(lines) + f"\n\nMeasured by `make timings` ({TIMES_FILE.as_posix()}): "
            f"{'; '.join(where)}. A load average above the number of cores means other processes "
            f"shared the CPU.")


def readme_block(recorded: dict, chapters: list[str]) -> str:
    return f"{README_START}\n{readme_table(recorded, chapters)}\n{README_END}"


def update_readme(root: Path, chapters: list[str]) -> bool:
    """Rewrite the README's table between its markers from the recorded file; True if changed
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


def record(root: Path, *, profiles=RECORDED_PROFILES, log=print) -> dict:
    """Execute every chapter at each profile on the CPU and write the recorded file; returns it."""
    import torch  # heavy: only the recording needs it

    from infonce_book.pipeline.execute import available_cores, kernel_thread_env, run_chapter

    out = {**load_recorded(root), "machine": {"cpu": cpu_model(), "cores": available_cores(),
                                              "python": platform.python_version(), "torch": torch.__version__},
           "threads": kernel_thread_env(), "command": "make timings"}
    with tempfile.TemporaryDirectory(prefix="infonce-times-") as tmp:
        for profile in profiles:
            before = load_average()
            seconds = {stem: round(run_chapter(stem, profile=profile, device="cpu", seed=0, force=True, root=root,
                                               build_dir=Path(tmp) / profile, log=log).seconds, 1)
                       for stem in executable_pages(root)}
            out.setdefault("profiles", {})[profile] = {
                "recorded": time.strftime("%Y-%m-%d"), "commit": git_commit(root),
                "load_average": {"before": before, "after": load_average()}, "seconds": seconds}
    atomic_write_text(root / TIMES_FILE, json.dumps(out, indent=2) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("record", "readme"), help="record: measure, then rewrite the README's "
                        "table; readme: only rewrite the table from the recorded file")
    args = parser.parse_args(argv)
    root = project_root().resolve()
    if args.action == "record":
        record(root, log=lambda msg: print(msg, file=sys.stderr, flush=True))
    changed = update_readme(root, list(executable_pages(root)))
    print(f"{root / TIMES_FILE}; README table {'updated' if changed else 'up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
