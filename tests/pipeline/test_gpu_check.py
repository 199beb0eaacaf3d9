"""The offline GPU check (:mod:`infonce_book.pipeline.gpu_check`, run by scripts/gpu_check.sh): its
rehearsal on this CPU, with no registry, and the pieces it relies on (carried set, wheel folder,
stage time limits, the direct chapter runner, the bundle, the chapter's kernel being the
pipeline's own interpreter)."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from infonce_book.pipeline import gpu_check
from infonce_book.pipeline import run as pipeline
from infonce_book.pipeline.gpu_check import cli as gpu_cli
from infonce_book.pipeline.gpu_check import direct, probe, route

from .support import HEADER, PARAMETERS

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.py"


def _project(tmp_path, chapter_body: str) -> Path:
    """A minimal book with one chapter ``ok`` whose code cells are ``chapter_body``."""
    (tmp_path / "book").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    (tmp_path / "book" / "ok.md").write_text(HEADER + "\n# A chapter\n" + PARAMETERS + chapter_body)
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/ok\n")
    return tmp_path


#: The chapters the suite's rehearsal executes: the first chapter and the real-data one.
REHEARSED = ("c1_rate", "c6_digits")


@pytest.mark.book
@pytest.mark.rehearsal
def test_rehearsal_of_the_offline_gpu_check_passes_with_no_registry(smoke_book, tmp_path):
    """``bash scripts/gpu_check.sh --rehearse`` (the route of the offline GPU machine, on this CPU:
    smoke profile, --device cpu, PIP_NO_INDEX=1) passes, and its bundle holds what it should.

    It starts from a copy of the session's smoke build's experiment cache (``--cache-from``) and
    executes two chapters, :data:`REHEARSED` (the first, and the real-data one, whose imports differ
    most), through papermill in the stand-in interpreter with the carried wheels; they write their
    ledger records, which must be the smoke build's. The smoke book itself is executed once per
    test run, by the session's smoke build; ``make gpu-check-rehearse`` rehearses every chapter."""
    out, work = tmp_path / "out", tmp_path / "work"
    env = {**os.environ, "PIP_NO_INDEX": "1", "PYTHON": sys.executable}
    for k in ("OUT", "PYTHONPATH", "INFONCE_BOOK_LEDGER_DIR", "INFONCE_BOOK_CACHE_DIR", "INFONCE_BOOK_BUILD_DIR"):
        env.pop(k, None)
    cache = smoke_book.build / "cache"
    assert any(cache.glob("*.pkl")), f"the smoke build left no experiment cache in {cache}"
    committed = ROOT / "benchmarks" / "results" / "cpu" / "results.csv"
    committed_mtime = committed.stat().st_mtime_ns
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--rehearse", "--out", str(out),
                           "--work", str(work), "--cache-from", str(cache), "--chapters", ",".join(REHEARSED)],
                          env=env, cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "[rehearse] passed" in proc.stdout
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(gpu_check.BUNDLE) and len(files) <= 8
    timings = json.loads((out / "timings.json").read_text())
    assert [s["name"] for s in timings["stages"]] == ["setup", "tests", "benchmark", "chapters"]
    assert all(s["status"] == "passed" for s in timings["stages"]) and timings["skipped"] == []
    chapters = list(REHEARSED)
    assert set(chapters) <= set(pipeline.chapters(ROOT))
    assert [c["chapter"] for c in timings["chapters"]] == chapters
    assert all(c["runner"] == "papermill" and c["status"] == "passed" for c in timings["chapters"])
    assert set(timings["notebook_seconds"]["smoke"]) == set(chapters)
    ledger = json.loads((out / "ledger.json").read_text())
    assert {r["chapter"] for r in ledger} == set(chapters)
    assert {r["profile"] for r in ledger} == {"smoke"} and {r["device"] for r in ledger} == {"cpu"}
    smoke = [r for c in chapters for r in json.loads((smoke_book.build / "ledger" / f"{c}.json").read_text())]
    assert sorted(ledger, key=lambda r: (r["chapter"], r["id"])) == sorted(smoke, key=lambda r: (r["chapter"], r["id"]))
    env_json = json.loads((out / "environment.json").read_text())
    assert env_json["experiment_cache"]["entries"] == len(list(cache.iterdir()))
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
    print(f"rehearsal: {seconds:.0f} s; stages " + ", ".join(f"{s['name']} {s['seconds']:.0f} s" for s in timings["stages"]))


def test_the_carried_set_is_the_notebook_tool_chain_less_the_gpu_machines_packages():
    carried = {gpu_check.canon(n) for n, _ in gpu_check.carried_distributions("3.12", optional=False)}
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
    path = ROOT / "book" / "c1_rate.md"
    text = path.read_text()
    cells, reader = direct.read_code_cells(path)
    assert reader == "jupytext"
    assert cells[0][0] == ["parameters"] and 'profile = "standard"' in cells[0][1]
    assert "chapter.setup(" in cells[1][1] and not cells[1][0]
    assert len(cells) == text.count("```{code-cell}")
    assert not any(src.startswith(":") for _, src in cells)


@pytest.mark.parametrize("stem", list(pipeline.chapters(ROOT)))
def test_the_myst_reader_gives_jupytexts_code_cells_for_every_page(stem):
    """Where jupytext is missing (no carried wheels) the direct runner reads the cells itself: the
    same sources and tags as jupytext (what papermill runs), cell by cell."""
    path = pipeline.chapters(ROOT)[stem]
    by_jupytext, reader = direct.read_code_cells(path)
    assert reader == "jupytext" and by_jupytext
    assert direct.myst_code_cells(path.read_text(encoding="utf-8")) == by_jupytext


def test_the_myst_reader_reads_yaml_options_and_colon_options():
    text = ("```{code-cell} ipython3\n---\ntags: [remove-input, hide-output]\n---\nx = 1\n```\n\n+++\n\n"
            "```{code-cell} ipython3\n:tags: [parameters]\n\nseed = 0\n```\n")
    assert direct.myst_code_cells(text) == [(["remove-input", "hide-output"], "x = 1"), (["parameters"], "seed = 0")]


def _direct(root: Path, *args: str, blocked=(), cwd=None, script=False) -> subprocess.CompletedProcess:
    """``gpu_check.py direct-chapter ok`` for the project ``root``, in a fresh interpreter where the
    modules ``blocked`` do not import (``script=True``: through scripts/gpu_check.py itself, with
    no PYTHONPATH: the entry point finds the tree's src/)."""
    argv = ["direct-chapter", "ok", "--build-dir", str(root / "_build"), *args]
    code = (f"import sys; sys.modules.update(dict.fromkeys({tuple(blocked)!r})); "
            f"from infonce_book.pipeline.gpu_check.cli import main; sys.exit(main({argv!r}))")
    env = {**os.environ, "INFONCE_BOOK_ROOT": str(root), "PYTHONPATH": str(ROOT / "src")}
    for k in (*pipeline.THREAD_VARIABLES, "INFONCE_BOOK_PIPELINE", *(("PYTHONPATH",) if script else ())):
        env.pop(k, None)
    cmd = [sys.executable, str(SCRIPT), *argv] if script else [sys.executable, "-c", code]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=cwd or root)


@pytest.mark.parametrize("reader", ["jupytext", "myst"])
def test_the_direct_runner_runs_a_chapter_without_papermill_ipython_or_myst_nb(tmp_path, reader):
    """The fallback when no wheels were carried: the chapter's code cells in a plain interpreter
    where papermill, IPython and myst-nb do not import (nor jupytext, for ``reader="myst"``);
    parameters are set, glue and display calls work, and the ledger record arrives."""
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
    blocked = ("papermill", "nbclient", "IPython", "myst_nb", "ipykernel") + (("jupytext",) if reader == "myst" else ())
    proc = _direct(root, "--profile", "smoke", "--device", "cpu", "--seed", "7", blocked=blocked, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"cells read by {reader}" in proc.stderr
    records = json.loads((root / "_build" / "ledger" / "ok.json").read_text())
    assert [(r["id"], r["measured"], r["profile"], r["device"]) for r in records] == [("seed", 7.0, "smoke", "cpu")]
    assert "ok" in json.loads((root / "_build" / "timings.json").read_text())["smoke"]


def test_the_direct_runner_runs_with_the_pipelines_environment_and_thread_settings(tmp_path):
    """As under papermill (:func:`pipeline.chapter_env`): INFONCE_BOOK_PIPELINE=1, the root, build and
    ledger folders, no progress bars, one thread per core and the passive wait policy, set before
    the chapter imports NumPy; the working directory is the chapter's folder."""
    root = _project(tmp_path, """
```{code-cell} ipython3
import json, os, sys
seen = {k: os.environ.get(k) for k in ("INFONCE_BOOK_PIPELINE", "INFONCE_BOOK_ROOT", "INFONCE_BOOK_BUILD_DIR",
        "INFONCE_BOOK_LEDGER_DIR", "INFONCE_BOOK_NO_PROGRESS", "MPLBACKEND", "OMP_NUM_THREADS",
        "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY", "MKL_DYNAMIC")}
seen["cwd"] = os.getcwd()
seen["numpy_before"] = "numpy" in sys.modules
import torch
seen["torch_threads"] = torch.get_num_threads()
open(os.path.join(os.environ["INFONCE_BOOK_BUILD_DIR"], "seen.json"), "w").write(json.dumps(seen))
```
""")
    proc = _direct(root, "--profile", "smoke", "--device", "cpu")
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads((root / "_build" / "seen.json").read_text())
    expected = pipeline.chapter_env(root, root / "_build", Path("ledger"), mpl_backend="Agg", environ={})
    ledger = seen.pop("INFONCE_BOOK_LEDGER_DIR")
    assert Path(ledger).is_absolute() and ledger != str(root / "_build" / "ledger")  # a temporary folder
    assert {k: seen[k] for k in expected if k != "INFONCE_BOOK_LEDGER_DIR"} == {
        k: v for k, v in expected.items() if k != "INFONCE_BOOK_LEDGER_DIR"}
    assert seen["INFONCE_BOOK_PIPELINE"] == "1" and seen["OMP_WAIT_POLICY"] == "PASSIVE"
    assert seen["OMP_NUM_THREADS"] == str(pipeline.available_cores()) == str(seen["torch_threads"])
    assert seen["cwd"] == str(root / "book") and seen["numpy_before"] is False


def test_the_direct_runner_fails_naming_the_cell_and_keeps_no_records(tmp_path):
    root = _project(tmp_path, """
```{code-cell} ipython3
from infonce_book.experiment.ledger import Ledger

Ledger("ok", profile, device, seed).record(claim="C0", id="x", quantity="x", predicted=1, measured=1,
                                           ci_low=0, ci_high=2, params={})
```

```{code-cell} ipython3
raise RuntimeError('boom')
```
""")
    proc = _direct(root, "--profile", "smoke", "--device", "cpu", script=True)
    assert proc.returncode == 1
    assert "<ok cell 2>" in proc.stderr and "RuntimeError: boom" in proc.stderr
    assert not (root / "_build" / "ledger" / "ok.json").exists()  # no records of a run that did not finish


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


def test_the_entry_point_is_thin_and_the_package_imports_only_the_standard_library():
    """scripts/gpu_check.py only hands over to the package; importing the package (which the GPU
    machine's python3 does before any wheel is installed) loads no third-party module."""
    assert len(SCRIPT.read_text().splitlines()) <= 15
    code = ("import sys; import infonce_book.pipeline.gpu_check as g; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'torch', 'yaml', 'pandas', 'packaging', "
            "'jupytext', 'nbformat', 'tqdm', 'matplotlib'}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_the_command_line_keeps_its_options_and_defaults():
    assert gpu_cli.command_line([]) == ["run"]
    assert gpu_cli.command_line(["--chapters", "c1_rate"]) == ["run", "--chapters", "c1_rate"]
    assert gpu_cli.command_line(["--rehearse", "--budget", "9"]) == ["rehearse", "--budget", "9"]
    assert gpu_cli.command_line(["wheels", "--dest", "x"]) == ["wheels", "--dest", "x"]
    run = gpu_cli.parser().parse_args(gpu_cli.command_line([]))
    assert (run.profile, run.device, run.budget, run.runner, run.mode) == ("full", "cuda", 540, "auto", "device")
    assert Path(run.wheels) == ROOT / ".gpu-wheels"
    rh = gpu_cli.parser().parse_args(gpu_cli.command_line(["--rehearse", "--cache-from", "c", "--stages", "tests"]))
    assert (rh.command, rh.profile, rh.device, rh.budget, rh.cache_from, rh.stages) == (
        "rehearse", "smoke", "cpu", 2400, "c", "tests")
    assert gpu_cli.parser().parse_args(["wheels"]).python_version == gpu_check.DEVICE_PYTHON == "3.12"


def _wheel(folder: Path, name: str, version: str, requires=()) -> Path:
    """A wheel holding only its METADATA (what the folder check reads)."""
    path = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name.replace('-', '_')}-{version}.dist-info/METADATA", meta)
    return path


def test_the_wheel_folder_check_finds_two_versions_and_unmet_requirements(tmp_path):
    _wheel(tmp_path, "papermill", "2.7.0", ["nbclient>=0.2", "tqdm>=4", "pywin32; sys_platform == 'win32'"])
    _wheel(tmp_path, "nbclient", "0.10.0")
    _wheel(tmp_path, "myst-nb", "1.3.0", ["sphinx>=7"])  # carried without its book-build dependencies
    assert gpu_check.check_wheel_folder(tmp_path, "3.12") == ["myst_nb-1.3.0-py3-none-any.whl needs docutils, "
                                                              "which is neither carried nor on the GPU machine"]
    _wheel(tmp_path, "docutils", "0.21")
    assert gpu_check.check_wheel_folder(tmp_path, "3.12") == []  # tqdm is on the machine; pywin32 not for Linux
    _wheel(tmp_path, "jupytext", "1.0", ["nbclient>=1", "mdit-py-plugins"])
    _wheel(tmp_path, "nbclient", "0.9.0")
    problems = gpu_check.check_wheel_folder(tmp_path, "3.12")
    assert any(p.startswith("two wheels of nbclient") for p in problems)
    assert any("needs nbclient>=1, carried: 0." in p for p in problems)  # whichever of the two is kept
    assert any("needs mdit-py-plugins, which is neither carried" in p for p in problems)


def test_installing_no_wheels_still_gives_the_package_its_version(tmp_path):
    res = route.install_wheels([], tmp_path / "site", dict(os.environ), 10, tmp_path / "log")
    assert res["status"] == "passed"
    name, version = gpu_check.machine.project_name_version()
    meta = (tmp_path / "site" / f"{name.replace('-', '_')}-{version}.dist-info" / "METADATA").read_text()
    assert f"Name: {name}\nVersion: {version}\n" in meta and (name, version) == ("infonce-book", "0.1.0")


def test_the_stages_run_with_the_carried_site_first_and_no_ledger_or_build_folder_of_the_callers(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("INFONCE_BOOK_BUILD_DIR", "/mine")
    env = route.stage_env(tmp_path / "site", tmp_path)
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tmp_path / "site"), str(ROOT / "src"), "/elsewhere"]
    assert "INFONCE_BOOK_LEDGER_DIR" not in env and "INFONCE_BOOK_BUILD_DIR" not in env
    assert env["INFONCE_BOOK_CACHE_DIR"] == str(tmp_path / "cache") and env["GPU_CHECK_SITE"] == str(tmp_path / "site")


def test_the_probe_says_where_each_module_comes_from():
    assert probe.origin("/w/site/papermill/__init__.py", "/w/site", "/t/src") == "carried"
    assert probe.origin("/t/src/infonce_book/__init__.py", "/w/site", "/t/src") == "src"
    assert probe.origin("/usr/lib/python3/dist-packages/torch/__init__.py", "/w/site", "/t/src") == "image"
    assert probe.origin(None, "/w/site", "/t/src") == "image"  # a namespace package has no file


def test_a_junit_report_is_counted_with_the_gpu_tests_skipped_for_want_of_cuda(tmp_path):
    (tmp_path / "r.xml").write_text(
        '<testsuites><testsuite tests="3" failures="0" errors="0" skipped="2">'
        '<testcase name="a"/><testcase name="b"><skipped message="needs a CUDA device"/></testcase>'
        '<testcase name="c"><skipped message="slow"/></testcase></testsuite></testsuites>')
    assert gpu_check.junit_summary(tmp_path / "r.xml") == {"tests": 3, "failures": 0, "errors": 0, "skipped": 2,
                                                            "skipped_gpu": 1}
    assert "error" in gpu_check.junit_summary(tmp_path / "missing.xml")


def _bundle(out: Path) -> None:
    """A complete bundle of a rehearsal with two chapters, ``a`` (claims) and ``b`` (back matter)."""
    out.mkdir()
    for name in gpu_check.BUNDLE:
        (out / name).write_text("")
    stages = [{"name": n, "status": "passed"} for n in gpu_check.STAGES]
    stages[1]["tests"] = {"tests": 10, "failures": 0, "errors": 0}
    (out / "timings.json").write_text(json.dumps({"stages": stages, "chapters": [
        {"chapter": c, "status": "passed", "runner": "papermill"} for c in ("a", "b")]}))
    mods = {m: {"origin": "carried"} for m in ("papermill", "jupytext", "nbformat", "nbclient", "ipykernel",
                                               "myst_nb.ext.glue", "info_nce")}
    mods.update({m: {"origin": "image"} for m in ("torch", "numpy", "pandas", "pytest")}, infonce_book={"origin": "src"})
    (out / "environment.json").write_text(json.dumps({"probe": {"modules": mods, "unmet_requirements": []}}))
    (out / "ledger.json").write_text(json.dumps([{"chapter": "a", "id": "x"}]))


def test_the_bundle_check_passes_a_complete_bundle_and_names_what_is_missing(tmp_path):
    out = tmp_path / "out"
    _bundle(out)
    assert gpu_check.check_bundle(out, ["a", "b"], no_claims=frozenset({"b"})) == []
    assert gpu_check.check_bundle(out, ["a", "b"]) == ["no ledger records of b"]
    (out / "benchmark.png").unlink()
    env = json.loads((out / "environment.json").read_text())
    env["probe"]["modules"]["papermill"]["origin"] = "image"
    (out / "environment.json").write_text(json.dumps(env))
    timings = json.loads((out / "timings.json").read_text())
    timings["stages"][3]["status"] = "timed out"
    timings["chapters"][0]["runner"] = "direct"
    (out / "timings.json").write_text(json.dumps(timings))
    problems = gpu_check.check_bundle(out, ["a", "b"], no_claims=frozenset({"b"}))
    assert problems[0] == "missing benchmark.png"
    assert any(p.startswith("stage chapters: timed out") for p in problems)
    assert any(p.startswith("chapter a: ") for p in problems)
    assert any(p.startswith("papermill not loaded from the carried wheels") for p in problems)
    assert len(problems) == 4
