"""Measure one chapter's execution time with the libraries' default thread settings and with the
book's (:func:`infonce_book.pipeline.run.kernel_thread_env`: one thread per core, passive OpenMP
wait policy), each alone and next to a busy process (a Python loop on one core), and write the
chapter's section of ``benchmarks/results/cpu/kernel_threads.md`` (other chapters' sections stay).

    INFONCE_BOOK_NO_PROGRESS=1 .venv/bin/python scripts/measure_kernel_threads.py [--chapter c1_rate] [--repeats 2]

Each run is forced, at the smoke profile on the CPU, into a fresh build folder (empty experiment
cache). The 1-minute load average before each run is recorded: other work on the machine slows
every run down, and the table says under which load each number was taken.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from infonce_book.pipeline import run as pipeline

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "cpu" / "kernel_threads.md"


def one_run(chapter: str, settings: str, busy: bool, tmp: Path) -> tuple[float, float, float]:
    original = pipeline.kernel_thread_env
    if settings == "library defaults":  # what the pipeline did before: no thread variables set
        pipeline.kernel_thread_env = lambda environ=None: {}
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        time.sleep(2 if busy else 0)
        load = os.getloadavg()[0]
        res = pipeline.run_chapter(chapter, profile="smoke", device="cpu", seed=0, force=True, root=ROOT,
                                   build_dir=tmp / f"{settings}-{busy}-{time.time_ns()}", log=lambda m: None)
        return res.seconds, load, os.getloadavg()[0]
    finally:
        pipeline.kernel_thread_env = original
        if hog is not None:
            hog.terminate()
            hog.wait()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chapter", default="c1_rate")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="infonce-threads-") as tmp:
        for rep in range(args.repeats):
            for settings in ("library defaults", "book settings"):
                for busy in (False, True):
                    secs, before, after = one_run(args.chapter, settings, busy, Path(tmp))
                    rows.append((settings, busy, rep + 1, secs, before, after))
                    print(f"{settings:<17} busy={busy!s:<5} run {rep + 1}: {secs:6.1f} s "
                          f"(load {before:.1f} -> {after:.1f})", flush=True)
    env = pipeline.kernel_thread_env()
    head = ["# Chapter time and kernel thread settings (smoke profile, CPU)", "",
            f"Measured by `scripts/measure_kernel_threads.py` on {pipeline.available_cores()} cores. *library "
            f"defaults*: no thread variable set (torch, MKL and OpenBLAS start one thread per core; OpenMP "
            f"threads spin before they sleep); *book settings*: "
            + ", ".join(f"`{k}={v}`" for k, v in env.items()) + ". *busy*: one more process running a "
            "Python loop on one core. The 1-minute load average before and after each run says how busy the "
            "machine was with everything else (other work shares this machine).", ""]
    section = [f"## `{args.chapter}` ({time.strftime('%Y-%m-%d')})", "",
               "| settings | busy process | run | seconds | load before | load after |", "|---|---|---|---|---|---|"]
    section += [f"| {s} | {'yes' if b else 'no'} | {r} | {sec:.1f} | {lb:.1f} | {la:.1f} |"
                for s, b, r, sec, lb, la in rows]
    sections = {}
    if OUT.is_file():  # keep the other chapters' sections
        for block in OUT.read_text().split("\n## ")[1:]:
            sections[block.split("`")[1]] = "## " + block.strip()
    sections[args.chapter] = "\n".join(section)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(head) + "\n" + "\n\n".join(sections[k] for k in sorted(sections)) + "\n")
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
