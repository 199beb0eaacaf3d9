"""The rehearsal: the device route on a CPU machine, offline (``gpu_check.sh --rehearse``).

:func:`rehearse` builds a stand-in for the GPU machine's interpreter (:func:`build_standin`: a
virtual environment that sees only the distributions of the project's ``.venv`` that the GPU
machine also has), rebuilds the carried wheels from the ``.venv``'s installed copies (the same
names as ``make gpu-wheels`` downloads, for this interpreter's version;
:func:`~.carried.wheel_from_installed`), runs ``run --mode rehearsal`` (smoke profile, ``--device
cpu``) with that interpreter and those wheels, with ``PIP_NO_INDEX=1``, and checks the bundle
(:func:`~.bundle.check_bundle`). It needs no registry and no ``.gpu-wheels/``.

``--cache-from DIR`` (the test suite passes its smoke build's ``cache/``) starts the chapters with a
copy of that experiment cache: each chapter still executes through papermill in the stand-in, with
the carried wheels, and its ledger records still come out, but its runners load their tables
instead of computing them again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from importlib import metadata
from pathlib import Path

from .bundle import check_bundle
from .carried import carried_distributions, check_wheel_folder, requirements, wheel_from_installed
from .machine import DEVICE_PACKAGES, ROOT, canon, project_name_version, say

__all__ = ["build_standin", "rehearse"]

#: The thin entry point the stand-in interpreter runs (the package is not installed in it).
SCRIPT = ROOT / "scripts" / "gpu_check.py"


def _allowed(dists: dict, carried: set[str], py: str) -> set[str]:
    """The distributions the stand-in sees: the device image's and what they require here, never
    a carried one nor the project itself."""
    allowed, todo = set(), [n for n in map(canon, DEVICE_PACKAGES) if n in dists]
    while todo:
        name = todo.pop()
        if name in allowed or name in carried or name not in dists:
            continue
        allowed.add(name)
        todo += [canon(r.name) for r in requirements(dists[name], py)]
    allowed.discard(canon(project_name_version()[0]))
    return allowed


def build_standin(dest: Path, carried: set[str]) -> Path:
    """A virtual environment (this interpreter's base Python) whose site-packages links only the
    distributions of this environment that the GPU machine has (``DEVICE_PACKAGES`` and what they
    require here), never a carried one nor the project itself. Returns its python."""
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    shutil.rmtree(dest, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    site = dest / "lib" / f"python{py}" / "site-packages"
    dists = {}
    for d in metadata.distributions():
        dists.setdefault(canon(d.metadata["Name"]), d)
    allowed = _allowed(dists, carried, py)
    files_ok, files_denied = set(), set()
    for name, d in dists.items():
        for f in d.files or []:
            if not f.as_posix().startswith(".."):
                (files_ok if name in allowed else files_denied).add(f.parts)
    denied_prefixes = {parts[:i] for parts in files_denied for i in range(1, len(parts))}
    source = Path(sysconfig.get_paths()["purelib"])
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


def _standin_problems(standin: Path, env: dict) -> list[str]:
    """Isolation: without the carried wheels the stand-in cannot run a chapter, and it has the
    image's packages."""
    problems = []
    iso = subprocess.run([str(standin), "-c", "import importlib.util as u, sys; "
                          "sys.exit(0 if any(u.find_spec(m) for m in ('papermill', 'nbclient', 'ipykernel', "
                          "'myst_nb', 'info_nce', 'infonce_book')) else 3)"],
                         env=env, cwd="/", capture_output=True, text=True, encoding="utf-8", errors="replace")
    if iso.returncode != 3:
        problems.append(f"the stand-in interpreter is not isolated: {iso.stdout} {iso.stderr}")
    probe_torch = subprocess.run([str(standin), "-c", "import torch, numpy, pandas, pytest"], env=env, cwd="/",
                                 capture_output=True, text=True, encoding="utf-8", errors="replace")
    if probe_torch.returncode:
        problems.append(f"the stand-in lacks the image's packages: {probe_torch.stderr[-500:]}")
    return problems


def _wheels(args, work: Path, carried: list[tuple[str, str]]) -> Path:
    if args.wheels:  # carried wheels made for this interpreter (e.g. `make gpu-wheels` under Python 3.12)
        return Path(args.wheels).resolve()
    wheels = work / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir(parents=True)
    for name, _version in carried:
        wheel_from_installed(metadata.distribution(name), wheels)
    return wheels


def _listing() -> tuple[list[str], frozenset[str]]:
    """The tree's pages that execute (``infonce-book chapters``) and those of the back matter."""
    rows = [line.split("\t") for line in subprocess.run(
        [sys.executable, "-m", "infonce_book", "chapters"], cwd=ROOT, capture_output=True, text=True, encoding="utf-8", errors="replace",
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")}).stdout.splitlines() if line.strip()]
    return [row[0] for row in rows], frozenset(row[0] for row in rows if row[-1] == "back matter")


def _run_command(args, standin: Path, wheels: Path, work: Path, out: Path) -> list[str]:
    cmd = [str(standin), str(SCRIPT), "run", "--mode", "rehearsal", "--profile", args.profile, "--device",
           args.device, "--wheels", str(wheels), "--work", str(work / "run"), "--out", str(out),
           "--budget", str(args.budget)]
    for opt in ("chapters", "stages"):
        if getattr(args, opt):
            cmd += [f"--{opt}", getattr(args, opt)]
    if args.cache_from:
        cmd += ["--cache-from", str(Path(args.cache_from).resolve())]
    return cmd


def rehearse(args) -> int:
    """``gpu_check.py rehearse`` (see the module docstring); 0 when the bundle is complete."""
    t0 = time.monotonic()
    work, out = Path(args.work).resolve() / "rehearse", Path(args.out).resolve()
    os.environ["PIP_NO_INDEX"] = "1"  # any registry download fails
    os.environ["PIP_CONFIG_FILE"] = os.devnull  # no local index or wheel folder from pip's configuration
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    carried = carried_distributions(py, optional=False)
    say(f"[rehearse] {len(carried)} carried distributions (for Python {py}): "
        + ", ".join(f"{n} {v}" for n, v in carried))
    wheels = _wheels(args, work, carried)
    problems = check_wheel_folder(wheels, py)
    standin = build_standin(work / "python", {canon(n) for n, _ in carried})
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PYTHONNOUSERSITE"] = "1"
    problems += _standin_problems(standin, env)
    say(f"[rehearse] stand-in interpreter {standin}, {len(list(wheels.glob('*.whl')))} wheels "
        f"({sum(w.stat().st_size for w in wheels.glob('*.whl')) / 2**20:.1f} MiB) in {wheels}; "
        f"prepared in {time.monotonic() - t0:.0f} s")
    rc = subprocess.run(_run_command(args, standin, wheels, work, out), env=env, cwd=ROOT).returncode
    listed, no_claims = _listing()
    chapters = args.chapters.split(",") if args.chapters else listed
    if not args.stages:
        problems += check_bundle(out, chapters, peer=any(canon(n) == "info-nce-pytorch" for n, _ in carried),
                                 no_claims=no_claims)
    if rc:
        problems.append(f"the run exited {rc}")
    for p in problems:
        say(f"[rehearse] problem: {p}")
    say(f"[rehearse] {'passed' if not problems else 'FAILED'} in {time.monotonic() - t0:.0f} s; bundle in {out}")
    return 1 if problems else 0
