"""The offline GPU check (scripts/gpu_check.py): its rehearsal on this CPU, with no registry, and
the pieces it relies on (carried set, stage time limits, direct chapter runner, the chapter's
kernel being the pipeline's own interpreter)."""

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infonce_book.pipeline import run as pipeline

from .support import HEADER, PARAMETERS

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.py"
spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
gpu_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_check)


def _project(tmp_path, chapter_body: str) -> Path:
    """A minimal book with one chapter ``ok`` whose code cells are ``chapter_body``."""
    (tmp_path / "book").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    (tmp_path / "book" / "ok.md").write_text(HEADER + "\n# A chapter\n" + PARAMETERS + chapter_body)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/ok\n")
    return tmp_path


@pytest.mark.book
@pytest.mark.rehearsal
def test_rehearsal_of_the_offline_gpu_check_passes_with_no_registry(tmp_path):
    """``bash scripts/gpu_check.sh --rehearse`` (the route of the offline GPU machine, on this CPU:
    smoke profile, --device cpu, PIP_NO_INDEX=1) passes, and its bundle holds what it should."""
    out, work = tmp_path / "out", tmp_path / "work"
    env = {**os.environ, "PIP_NO_INDEX": "1", "PYTHON": sys.executable}
    for k in ("OUT", "PYTHONPATH", "INFONCE_BOOK_LEDGER_DIR", "INFONCE_BOOK_CACHE_DIR", "INFONCE_BOOK_BUILD_DIR"):
        env.pop(k, None)
    committed = ROOT / "benchmarks" / "results" / "cpu" / "results.csv"
    committed_mtime = committed.stat().st_mtime_ns
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--rehearse", "--out", str(out),
                           "--work", str(work)], env=env, cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "[rehearse] passed" in proc.stdout
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(gpu_check.BUNDLE) and len(files) <= 8
    timings = json.loads((out / "timings.json").read_text())
    assert [s["name"] for s in timings["stages"]] == ["setup", "tests", "benchmark", "chapters"]
    assert all(s["status"] == "passed" for s in timings["stages"]) and timings["skipped"] == []
    chapters = list(pipeline.chapters(ROOT))
    assert [c["chapter"] for c in timings["chapters"]] == chapters
    assert all(c["runner"] == "papermill" and c["status"] == "passed" for c in timings["chapters"])
    assert set(timings["notebook_seconds"]["smoke"]) == set(chapters)
    ledger = json.loads((out / "ledger.json").read_text())
    claims = [c for c in chapters if f"book/{c}" not in pipeline.back_matter(ROOT)]  # the robustness page records none
    assert {r["chapter"] for r in ledger} == set(claims) and "robustness" in set(chapters) - set(claims)
    assert {r["profile"] for r in ledger} == {"smoke"} and {r["device"] for r in ledger} == {"cpu"}
    env_json = json.loads((out / "environment.json").read_text())
    mods = env_json["probe"]["modules"]
    # The notebook tool chain came from the carried wheels, torch from the stand-in interpreter's
    # own packages, the package from src/; the kernel ran in the stand-in interpreter.
    assert {mods[m]["origin"] for m in ("papermill", "nbclient", "ipykernel", "jupytext", "myst_nb.ext.glue")} == {"carried"}
    assert mods["torch"]["origin"] == "image" and mods["infonce_book"]["origin"] == "src"
    assert env_json["probe"]["executable"].startswith(str(work))
    assert env_json["probe"]["unmet_requirements"] == []
    tests = timings["stages"][1]["tests"]
    assert tests["tests"] > 100 and tests["failures"] == 0 and tests["errors"] == 0
    # The rehearsal's benchmark went to its own folder, not over the committed CPU results.
    assert committed.stat().st_mtime_ns == committed_mtime
    assert (work / "rehearse" / "run" / "benchmark" / "results.csv").is_file()
    print(f"rehearsal: {seconds:.0f} s")


def test_the_carried_set_is_the_notebook_tool_chain_less_the_gpu_machines_packages():
    carried = {gpu_check._canon(n) for n, _ in gpu_check.carried_distributions("3.12", optional=False)}
    assert {"papermill", "jupytext", "nbformat", "nbclient", "ipykernel", "myst-nb", "docutils",
            "jupyter-client", "pyzmq", "ipython", "matplotlib-inline"} <= carried
    # What the machine has is never carried; myst-nb's book-build dependencies are not carried.
    assert not carried & {"torch", "numpy", "scipy", "pandas", "pyyaml", "requests", "tqdm", "packaging"}
    assert not carried & {"sphinx", "myst-parser", "jupyter-cache", "jupyter-book"}


def test_every_test_file_with_gpu_tests_is_run_by_the_check():
    with_gpu = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")
                if re.search(r"mark\.gpu\b", p.read_text())}
    listed = [ROOT / f for f in gpu_check.TEST_FILES]
    assert with_gpu and all(p.exists() for p in listed)
    covered = {f for f in with_gpu if any((ROOT / f) == p or p in (ROOT / f).parents for p in listed)}
    assert covered == with_gpu, sorted(with_gpu - covered)


def test_bench_and_budget_constants_fit_the_gpu_machine():
    # One command of at most 10 minutes: the run's budget leaves a minute; when the other stages
    # use all of their budgets, the chapters still keep 45% of it.
    assert gpu_check.DEVICE_BUDGET_S <= 540
    left = gpu_check.DEVICE_BUDGET_S - sum(gpu_check.STAGE_BUDGET_S.values()) - gpu_check.RESERVE_S
    assert left >= 0.45 * gpu_check.DEVICE_BUDGET_S
    assert len(gpu_check.BUNDLE) <= 8
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", n) for n in gpu_check.BUNDLE)


def test_a_stage_past_its_budget_is_stopped_with_what_it_started(tmp_path):
    """The stage's process group and its descendants in sessions of their own (as a notebook
    kernel is) are stopped at the time limit; the result says ``timed out``."""
    pidfile = tmp_path / "grandchild.pid"
    code = ("import subprocess, sys, time; "
            f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True); "
            f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    t0 = time.monotonic()
    res = gpu_check.run_limited([sys.executable, "-c", code], env=os.environ, timeout=3, log_path=tmp_path / "log")
    assert res["status"] == "timed out" and res["rc"] is None
    assert time.monotonic() - t0 < 30
    pid = int(pidfile.read_text())
    for _ in range(50):  # reaped by init shortly after the kill
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the stage's grandchild outlived the stage")
    ok = gpu_check.run_limited([sys.executable, "-c", "print('hi')"], env=os.environ, timeout=30,
                               log_path=tmp_path / "log")
    assert ok["status"] == "passed" and ok["rc"] == 0 and "hi" in (tmp_path / "log").read_text()


def test_fair_share_splits_what_is_left_and_refuses_crumbs():
    assert gpu_check.fair_share(300, 6) == 50
    assert gpu_check.fair_share(20, 6) == 0  # 3.3 s each: not worth starting a chapter
    assert gpu_check.fair_share(100, 0) == 0


def test_code_cells_of_a_myst_notebook_with_their_tags():
    text = (ROOT / "book" / "c1_rate.md").read_text()
    cells = gpu_check.code_cells(text)
    assert cells[0][0] == ["parameters"] and 'profile = "standard"' in cells[0][1]
    assert "chapter.setup(" in cells[1][1] and not cells[1][0]
    assert len(cells) == text.count("```{code-cell}")
    assert not any(src.startswith(":") for _, src in cells)


def test_the_direct_runner_runs_a_chapter_without_papermill_ipython_or_myst_nb(tmp_path):
    """The fallback when no wheels were carried: the chapter's code cells in a plain interpreter
    where papermill, IPython and myst-nb do not import; parameters are set, glue and display
    calls work, and the ledger record arrives."""
    root = _project(tmp_path, """
```{code-cell} ipython3
from myst_nb import glue
from IPython.display import Math
from infonce_book.experiment.ledger import Ledger

ledger = Ledger("ok", profile, device, seed)
ledger.record(claim="C0", id="seed", quantity="seed", predicted=seed, measured=seed, ci_low=seed,
              ci_high=seed, params={})
glue("answer", 42, display=False)
Math("x")
import matplotlib.pyplot as plt
fig, ax = plt.subplots()  # matplotlib looks into sys.modules["IPython"] when a figure is made
ax.plot([0, 1])
```
""")
    blocked = "papermill", "nbclient", "IPython", "myst_nb", "ipykernel"
    code = (f"import sys, runpy; sys.modules.update(dict.fromkeys({blocked!r})); "
            f"sys.argv = [{str(SCRIPT)!r}, 'direct-chapter', 'ok', '--profile', 'smoke', '--device', 'cpu', "
            f"'--seed', '7', '--build-dir', {str(root / '_build')!r}]; runpy.run_path(sys.argv[0], run_name='__main__')")
    env = {**os.environ, "INFONCE_BOOK_ROOT": str(root), "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = json.loads((root / "_build" / "ledger" / "ok.json").read_text())
    assert [(r["id"], r["measured"], r["profile"], r["device"]) for r in records] == [("seed", 7.0, "smoke", "cpu")]
    assert "ok" in json.loads((root / "_build" / "timings.json").read_text())["smoke"]


def test_the_direct_runner_fails_naming_the_cell(tmp_path):
    root = _project(tmp_path, "\n```{code-cell} ipython3\nx = 1\n```\n\n```{code-cell} ipython3\nraise RuntimeError('boom')\n```\n")
    env = {**os.environ, "INFONCE_BOOK_ROOT": str(root), "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, str(SCRIPT), "direct-chapter", "ok", "--profile", "smoke", "--device",
                           "cpu", "--build-dir", str(root / "_build")], env=env, capture_output=True, text=True)
    assert proc.returncode == 1
    assert "<ok cell 2>" in proc.stderr and "RuntimeError: boom" in proc.stderr


def test_a_chapters_kernel_is_the_pipelines_interpreter_whatever_kernelspec_is_installed(tmp_path, monkeypatch):
    """A ``python3`` kernelspec naming another interpreter (here one that does not exist) does not
    take over: the chapter runs in ``sys.executable``, as on the GPU machine, where ipykernel
    comes as carried wheels and no kernelspec is installed."""
    decoy = tmp_path / "jupyter" / "kernels" / "python3"
    decoy.mkdir(parents=True)
    (decoy / "kernel.json").write_text(json.dumps({
        "argv": ["/nonexistent/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "decoy", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    root = _project(tmp_path / "book-root", "\n```{code-cell} ipython3\nimport sys\nprint('kernel:', sys.executable)\n```\n")
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
    assert [row[0] for row in rows] == list(pipeline.chapters(ROOT))
    assert {row[0] for row in rows if row[2] == "back matter"} == {"robustness"}
    assert all(row[2] in ("chapter", "back matter") for row in rows)


def test_wheels_rebuilt_from_an_installed_distribution_hold_its_files_and_a_valid_record(tmp_path):
    import base64
    import hashlib
    import zipfile
    from importlib import metadata

    whl = gpu_check.wheel_from_installed(metadata.distribution("tabulate"), tmp_path)
    assert re.fullmatch(r"tabulate-[\d.]+-py3-none-any\.whl", whl.name)
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        record = z.read(next(n for n in names if n.endswith(".dist-info/RECORD"))).decode().splitlines()
        for row in record:
            path, digest, size = row.rsplit(",", 2)
            if digest:
                data = z.read(path)
                assert int(size) == len(data)
                assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert any(n.startswith("tabulate/") and n.endswith(".py") for n in names)
    assert not any("__pycache__" in n or n.endswith("/INSTALLER") for n in names)
