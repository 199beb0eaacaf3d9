"""The GPU check (``scripts/gpu_check.py``): its rehearsal on this CPU with no registry, its wheel
download command, and the chapter's kernel being the pipeline's own interpreter (as on a machine
whose ipykernel came as a wheel, with no kernelspec installed)."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infonce_book.pipeline import run as pipeline

from .support import HEADER, PARAMETERS

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.py"


def _script():
    spec = importlib.util.spec_from_file_location("gpu_check_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.book
@pytest.mark.rehearsal
def test_rehearsal_of_the_gpu_check_passes_with_no_registry(smoke_book, tmp_path):
    """``scripts/gpu_check.py --rehearse`` (smoke profile, ``--device cpu``, ``PIP_NO_INDEX=1``, no
    carried wheels) passes: the offline install finds everything installed, ``pytest -m gpu``
    runs (its tests skip on a CPU), and ``c1_rate`` runs through ``infonce-book run``, starting from
    a copy of the session's smoke build's experiment cache; its ledger records are the smoke
    build's, value for value. ``make gpu-check-rehearse`` runs every executable page."""
    out, work = tmp_path / "out", tmp_path / "work"
    cache = tmp_path / "cache"
    shutil.copytree(smoke_book.build / "cache", cache)
    env = {**os.environ, "PIP_NO_INDEX": "1", "INFONCE_BOOK_CACHE_DIR": str(cache)}
    for k in ("PYTHONPATH", "INFONCE_BOOK_LEDGER_DIR", "INFONCE_BOOK_BUILD_DIR"):
        env.pop(k, None)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--rehearse", "--out", str(out), "--work", str(work),
                           "--wheels", str(tmp_path / "no-wheels"), "--chapters", "c1_rate"],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "[gpu_check] passed" in proc.stdout
    assert {"environment.json", "timings.json", "ledger.json", "pytest.txt", "pytest.xml", "log.txt"} <= {
        p.name for p in out.iterdir()}
    timings = json.loads((out / "timings.json").read_text())
    assert [s["name"] for s in timings["steps"]] == ["install", "environment", "tests", "chapters"]
    assert all(s["status"] == "passed" for s in timings["steps"]), timings["steps"]
    assert [c["chapter"] for c in timings["chapters"]] == ["c1_rate"]
    environment = json.loads((out / "environment.json").read_text())
    assert environment["torch"] and environment["cuda_available"] in (True, False)
    assert "skipped" in (out / "pytest.txt").read_text() or "passed" in (out / "pytest.txt").read_text()
    ledger = json.loads((out / "ledger.json").read_text())
    smoke = json.loads((smoke_book.build / "ledger" / "c1_rate.json").read_text())
    assert ledger and sorted(ledger, key=lambda r: r["id"]) == sorted(smoke, key=lambda r: r["id"])


def test_the_script_imports_only_the_standard_library():
    # -S: no site-packages at all; -I: no PYTHONPATH, no user site.
    proc = subprocess.run([sys.executable, "-S", "-I", str(SCRIPT), "--help"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "--rehearse" in proc.stdout and "wheels" in proc.stdout


def test_the_requirements_are_pyprojects_and_the_wheels_leave_torch_to_the_gpu_machine(tmp_path, monkeypatch):
    script = _script()
    reqs = script.requirements()
    assert reqs[0].startswith("torch") and any(r.startswith("papermill") for r in reqs)
    assert any(r.startswith("pytest") for r in reqs) and any(r.startswith("pandas") for r in reqs)
    calls = []
    monkeypatch.setattr(script.subprocess, "call", lambda cmd: calls.append(cmd) or 0)
    assert script.download_wheels(tmp_path / "w", "3.12", ["manylinux_2_28_x86_64"]) == 0
    listed = (tmp_path / "w" / "requirements.txt").read_text().split()
    assert listed == [r for r in reqs if not r.startswith("torch")]
    cmd = calls[0]
    assert cmd[1:4] == ["-m", "pip", "download"] and "--only-binary=:all:" in cmd
    assert cmd[cmd.index("--python-version") + 1] == "3.12" and "--platform=manylinux_2_28_x86_64" in cmd


@pytest.mark.slow
def test_a_chapters_kernel_is_the_pipelines_interpreter_whatever_kernelspec_is_installed(tmp_path, monkeypatch):
    """A ``python3`` kernelspec naming another interpreter (here one that does not exist) does not
    take over: the chapter runs in ``sys.executable``, the interpreter into which the GPU check
    installed the carried wheels."""
    decoy = tmp_path / "jupyter" / "kernels" / "python3"
    decoy.mkdir(parents=True)
    (decoy / "kernel.json").write_text(json.dumps({
        "argv": ["/nonexistent/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "decoy", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    root = tmp_path / "book-root"
    (root / "book").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "book" / "intro.md").write_text("# Intro\n")
    cell = "\n```{code-cell} ipython3\nimport sys\nprint('kernel:', sys.executable)\n```\n"
    (root / "book" / "ok.md").write_text(HEADER + "\n# A chapter\n" + PARAMETERS + cell)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/ok\n")
    res = pipeline.run_chapter("ok", profile="smoke", device="cpu", root=root, log=lambda m: None)
    import nbformat

    text = "".join(o.get("text", "") for c in nbformat.read(res.notebook, as_version=4).cells
                   for o in c.get("outputs", []))
    assert f"kernel: {sys.executable}" in text


def test_python_dash_m_infonce_book_is_the_cli():
    proc = subprocess.run([sys.executable, "-m", "infonce_book", "chapters"], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "INFONCE_BOOK_ROOT": str(ROOT)})
    assert proc.returncode == 0
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    assert [row[0] for row in rows] == list(pipeline.executable_pages(ROOT))
    assert {row[0] for row in rows if row[2] == "back matter"} == {"robustness"}
    assert all(row[2] in ("chapter", "back matter") for row in rows)
