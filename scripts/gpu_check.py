#!/usr/bin/env python3
"""The GPU check: the book's GPU tests and chapters on a CUDA machine with no network access.

    make gpu-wheels                                # where pip works: .gpu-wheels/ for the GPU machine
    python3 scripts/gpu_check.py                   # there, from the repository (.gpu-wheels/ beside it)
    python3 scripts/gpu_check.py --rehearse        # here, on the CPU: the same route, smoke profile

Steps (each logged to ``<out>/log.txt``; a failed step does not stop the next):

1. ``install``: ``pip install --no-index --find-links <wheels>`` the project's requirements (core,
   ``[book]``, ``[test]``) into this interpreter, or, outside a virtual environment, into
   ``<work>/venv`` made with ``--system-site-packages`` (so the machine's own CUDA torch is used);
   what is installed already is kept. The package itself runs from ``src/``.
2. ``environment``: ``nvidia-smi``, Python, torch, CUDA and the GPU's name.
3. ``tests``: ``pytest -m gpu`` (a summary and a JUnit report).
4. ``chapters``: ``infonce-book run <chapter> --device <device> --profile <profile>`` for every
   executable page (or ``--chapters``), through papermill, into ``<work>/build``.
5. ``benchmark`` (CUDA only): ``benchmarks/bench_infonce.py --device cuda`` into ``<out>/benchmark``.

The results go to ``--out`` (default: ``benchmarks/results/cuda/check`` on CUDA,
``_build/gpu_check/rehearsal`` for ``--rehearse``): ``environment.json``, ``timings.json`` (each
step's and chapter's status and seconds), ``ledger.json`` (the chapters' claims), ``pytest.txt``,
``pytest.xml``, ``log.txt``, the failed chapters' partial notebooks. Exit status 0 only when every
step passed. Standard library only: nothing is imported before the wheels are installed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("book", "test")
#: Not downloaded by ``wheels``: the GPU machine brings its own CUDA build of torch.
NOT_CARRIED = ("torch",)


def requirements(extras=EXTRAS, exclude=()) -> list[str]:
    """The project's requirements (core and ``extras``) from ``pyproject.toml``, less ``exclude``."""
    import tomllib  # Python 3.11+; on 3.10 the check reads <wheels>/requirements.txt instead

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = project["dependencies"] + [r for e in extras for r in project["optional-dependencies"][e]]
    return [r for r in reqs if re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() not in exclude]


def download_wheels(dest: Path, python_version: str, platforms: list[str]) -> int:
    """``pip download`` the requirements (less torch) and what they need, as wheels for
    ``python_version`` on ``platforms``, into ``dest``; ``dest/requirements.txt`` lists them."""
    dest.mkdir(parents=True, exist_ok=True)
    reqs = requirements(exclude=NOT_CARRIED)
    (dest / "requirements.txt").write_text("\n".join(reqs) + "\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "pip", "download", "--dest", str(dest), "--only-binary=:all:",
           "--python-version", python_version, *[f"--platform={p}" for p in platforms],
           "-r", str(dest / "requirements.txt")]
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.call(cmd)


class Check:
    """One run of the check: the steps append to ``timings`` and ``log.txt``."""

    def __init__(self, args: argparse.Namespace):
        self.args, self.out, self.work = args, args.out.resolve(), args.work.resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.log = open(self.out / "log.txt", "w", encoding="utf-8")  # closed by main()
        self.python = sys.executable
        self.timings: dict = {"profile": args.profile, "device": args.device, "seed": args.seed, "steps": [],
                              "chapters": []}
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "src")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])),
            "INFONCE_BOOK_ROOT": str(ROOT), "INFONCE_BOOK_NO_PROGRESS": "1", "MPLBACKEND": "Agg"}
        for k in ("INFONCE_BOOK_LEDGER_DIR", "INFONCE_BOOK_BUILD_DIR"):
            self.env.pop(k, None)

    def say(self, msg: str) -> None:
        print(msg, flush=True)
        self.log.write(msg + "\n")
        self.log.flush()

    def call(self, cmd: list[str], capture: Path | None = None) -> int:
        """Run ``cmd`` in the repository; its output goes to the log (and to ``capture``)."""
        self.say("+ " + " ".join(map(str, cmd)))
        proc = subprocess.run(cmd, cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, encoding="utf-8", errors="replace")
        self.log.write(proc.stdout)
        if capture is not None:
            capture.write_text(proc.stdout, encoding="utf-8")
        return proc.returncode

    def step(self, name: str, fn) -> None:
        t0 = time.monotonic()
        self.say(f"=== {name}")
        try:
            ok, note = fn()
        except Exception as err:  # a step's own failure is recorded, the next step still runs
            ok, note = False, f"{type(err).__name__}: {err}"
        entry = {"name": name, "status": "passed" if ok else "failed", "seconds": round(time.monotonic() - t0, 1)}
        self.timings["steps"].append({**entry, **({"note": note} if note else {})})
        self.say(f"=== {name}: {entry['status']} ({entry['seconds']} s){' - ' + note if note else ''}")

    def install(self):
        wheels = self.args.wheels.resolve()
        listed = wheels / "requirements.txt"
        reqs = listed.read_text(encoding="utf-8").split() if listed.is_file() else requirements()
        if sys.prefix == sys.base_prefix:  # not a virtual environment: one that sees the system's packages
            venv = self.work / "venv"
            if self.call([sys.executable, "-m", "venv", "--system-site-packages", str(venv)]) != 0:
                return False, "could not create a virtual environment"
            self.python = str(venv / "bin" / "python")
        rc = self.call([self.python, "-m", "pip", "install", "--no-index", "--find-links", str(wheels),
                        "--disable-pip-version-check", *reqs])
        n = len(list(wheels.glob("*.whl")))
        return rc == 0, f"{n} wheels in {wheels}" + ("" if rc == 0 else "; pip could not install (see log.txt)")

    def environment(self):
        smi = shutil.which("nvidia-smi")
        info = {"nvidia_smi": subprocess.run([smi], capture_output=True, text=True).stdout if smi else "not found"}
        probe = ("import json, platform, sys, torch; c = torch.cuda.is_available(); print(json.dumps({"
                 "'python': sys.version, 'executable': sys.executable, 'platform': platform.platform(), "
                 "'torch': torch.__version__, 'cuda_build': torch.version.cuda, 'cuda_available': c, "
                 "'gpu': torch.cuda.get_device_name(0) if c else None}))")
        proc = subprocess.run([self.python, "-c", probe], cwd=ROOT, env=self.env, capture_output=True, text=True)
        info.update(json.loads(proc.stdout) if proc.returncode == 0 else {"error": proc.stderr[-2000:]})
        git = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        info["commit"] = git.stdout.strip()
        (self.out / "environment.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
        cuda_ok = info.get("cuda_available") or not self.args.device.startswith("cuda")
        return proc.returncode == 0 and cuda_ok, f"torch {info.get('torch')}, cuda {info.get('cuda_build')}, " \
                                                 f"gpu {info.get('gpu')}" + ("" if cuda_ok else "; torch sees no GPU")

    def tests(self):
        rc = self.call([self.python, "-m", "pytest", "-m", "gpu", "-q", "-rs", "-p", "no:cacheprovider",
                        f"--junitxml={self.out / 'pytest.xml'}"], capture=self.out / "pytest.txt")
        lines = (self.out / "pytest.txt").read_text(encoding="utf-8").strip().splitlines()
        return rc == 0, lines[-1] if lines else "no output"

    def chapters(self):
        build = self.work / "build"
        names = self.args.chapters or subprocess.run([self.python, "-m", "infonce_book", "chapters"], cwd=ROOT,
                                                     env=self.env, capture_output=True, text=True).stdout.split("\n")
        names = [n.split("\t")[0] for n in names if n.strip()]
        for name in names:
            t0 = time.monotonic()
            rc = self.call([self.python, "-m", "infonce_book", "run", name, "--device", self.args.device, "--profile",
                            self.args.profile, "--seed", str(self.args.seed), "--build-dir", str(build), "--force"])
            self.timings["chapters"].append({"chapter": name, "status": "passed" if rc == 0 else "failed",
                                             "seconds": round(time.monotonic() - t0, 1)})
            failed = build / "notebooks" / f"{name}.failed.ipynb"
            if failed.is_file():
                shutil.copy2(failed, self.out / failed.name)
        ledger = [r for p in sorted((build / "ledger").glob("*.json")) for r in json.loads(p.read_text("utf-8"))]
        (self.out / "ledger.json").write_text(json.dumps(ledger, indent=2), encoding="utf-8")
        bad = [c["chapter"] for c in self.timings["chapters"] if c["status"] != "passed"]
        verdicts = {v: sum(r.get("verdict") == v for r in ledger) for v in ("passed", "inconclusive", "failed")}
        return not bad and bool(names), f"{len(names) - len(bad)} of {len(names)} ran; ledger {verdicts}" + \
            (f"; failed: {', '.join(bad)}" if bad else "")

    def benchmark(self):
        rc = self.call([self.python, "benchmarks/bench_infonce.py", "--device", self.args.device,
                        "--out", str(self.out / "benchmark")])
        return rc == 0, ""

    def run(self) -> int:
        self.step("install", self.install)
        self.step("environment", self.environment)
        steps = {"tests": self.tests, "chapters": self.chapters, "benchmark": self.benchmark}
        if not self.args.device.startswith("cuda"):
            steps.pop("benchmark")
        for name, fn in steps.items():
            if name not in self.args.skip:
                self.step(name, fn)
        (self.out / "timings.json").write_text(json.dumps(self.timings, indent=2), encoding="utf-8")
        ok = all(s["status"] == "passed" for s in self.timings["steps"])
        self.say(f"[gpu_check] {'passed' if ok else 'FAILED'}; results in {self.out}")
        return 0 if ok else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="gpu_check.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--rehearse", action="store_true", help="on a CPU: --device cpu --profile smoke, out in _build/")
    p.add_argument("--wheels", type=Path, default=ROOT / ".gpu-wheels", help="the carried wheels (make gpu-wheels)")
    p.add_argument("--out", type=Path, default=None, help="the results folder")
    p.add_argument("--work", type=Path, default=ROOT / "_build" / "gpu_check", help="virtual environment, build")
    p.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    p.add_argument("--profile", default="full", choices=("smoke", "standard", "full"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chapters", type=lambda s: [c for c in s.split(",") if c], default=None,
                   help="comma-separated executable pages (default: all, see `infonce-book chapters`)")
    p.add_argument("--skip", type=lambda s: s.split(","), default=[], help="steps to skip: tests,chapters,benchmark")
    sub = p.add_subparsers(dest="command")
    w = sub.add_parser("wheels", help="download the wheels the GPU machine lacks (make gpu-wheels)")
    w.add_argument("--dest", type=Path, default=ROOT / ".gpu-wheels")
    w.add_argument("--python-version", default="3.12", help="the GPU machine's Python (default 3.12)")
    w.add_argument("--platform", action="append", default=None,
                   help="wheel platform tags (default: manylinux x86-64 ones); repeat for several")
    args = p.parse_args(argv)
    if args.command == "wheels":
        return download_wheels(args.dest, args.python_version, args.platform or [
            "manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "linux_x86_64"])
    if args.rehearse:
        args.device, args.profile = "cpu", "smoke"
    default_out = args.work / "rehearsal" if args.rehearse else ROOT / "benchmarks" / "results" / "cuda" / "check"
    args.out = args.out or default_out
    check = Check(args)
    try:
        return check.run()
    finally:
        check.log.close()


if __name__ == "__main__":
    sys.exit(main())
