"""One record of chapter times: the README's table is generated from the committed file that the
rerun boxes quote, and the kernel's thread settings do not oversubscribe the machine."""

import importlib.util
import json
import re
from pathlib import Path

import nbformat

from infonce_book.pipeline import run as pipeline
from infonce_book.pipeline import timings

from .support import OK_CHAPTER, minimal_project

ROOT = Path(__file__).resolve().parents[2]


def _recorder():
    """``benchmarks/chapter_times.py`` (``make timings``), which writes the file and the table."""
    spec = importlib.util.spec_from_file_location("chapter_times", ROOT / "benchmarks" / "chapter_times.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


times = _recorder()


def test_the_readme_table_is_the_recorded_file():
    recorded = timings.load_recorded(ROOT)
    readme = (ROOT / "README.md").read_text()
    block = re.search(re.escape(times.README_START) + r".*?" + re.escape(times.README_END), readme, flags=re.S)
    assert block, "README.md lacks the chapter-times markers"
    assert block.group(0) == times.readme_block(recorded, list(pipeline.executable_pages(ROOT))), (
        "README.md's table differs from benchmarks/results/cpu/chapter_times.json: run "
        "`python benchmarks/chapter_times.py readme` (or `make timings` to measure again)")


def test_the_recorded_times_are_of_chapters_that_exist():
    # a chapter without recorded times shows "not recorded" (a new chapter needs no re-recording to pass)
    recorded = timings.load_recorded(ROOT)
    assert recorded, f"{timings.TIMES_FILE} is missing: run `make timings`"
    for profile in timings.RECORDED_PROFILES:
        rec = recorded["profiles"][profile]
        assert set(rec["seconds"]) <= set(pipeline.executable_pages(ROOT)), profile
        assert all(s > 0 for s in rec["seconds"].values())
        assert {"before", "after"} <= set(rec["load_average"]) and rec["commit"] and rec["recorded"]
    assert recorded["machine"]["cores"] >= 1 and recorded["threads"]["OMP_WAIT_POLICY"] == "PASSIVE"


def test_the_readme_table_shows_each_chapter_and_the_total(tmp_path):
    recorded = {"machine": {"cpu": "X", "cores": 2, "python": "3.11", "torch": "2"},
                "threads": {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"},
                "profiles": {"smoke": {"recorded": "2026-01-01", "commit": "abc",
                                       "load_average": {"before": 0.5, "after": 1.0},
                                       "seconds": {"a": 30.0, "b": 100.0}},
                             "standard": {"recorded": "2026-01-01", "commit": "abc",
                                          "load_average": {"before": 0.5, "after": 1.0},
                                          "seconds": {"a": 60.0, "b": 200.0}}}}
    table = times.readme_table(recorded, ["a", "b"])
    assert "| `a` | 30 s | 60 s |" in table and "| `b` | 100 s | 3.3 min |" in table
    assert "| all chapters | 2.2 min | 4.3 min |" in table
    assert "load average 0.5 before and 1.0 after" in table
    unrecorded = times.readme_table(recorded, ["a", "new"])
    assert "| `new` | not recorded | not recorded |" in unrecorded and "| all chapters | not recorded |" in unrecorded
    # update_readme rewrites only the block between the markers.
    (tmp_path / "README.md").write_text(f"intro\n{times.README_START}\nold\n{times.README_END}\nrest\n")
    path = tmp_path / timings.TIMES_FILE
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(recorded))
    assert times.update_readme(tmp_path, ["a", "b"]) is True
    text = (tmp_path / "README.md").read_text()
    assert text.startswith("intro\n") and text.endswith("\nrest\n") and "| `a` | 30 s | 60 s |" in text
    assert times.update_readme(tmp_path, ["a", "b"]) is False


def test_the_kernel_gets_one_thread_per_core_and_the_passive_wait_policy():
    env = pipeline.kernel_thread_env({})
    n = str(pipeline.available_cores())
    assert env == {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n,
                   "OMP_WAIT_POLICY": "PASSIVE", "MKL_DYNAMIC": "FALSE"}
    # What the user set is kept.
    assert pipeline.kernel_thread_env({"OMP_NUM_THREADS": "1"})["OMP_NUM_THREADS"] == "1"


def test_the_chapter_kernel_runs_with_those_settings_and_knows_it_is_under_the_pipeline(tmp_path, monkeypatch):
    project = minimal_project(tmp_path)
    (project / "book" / "ok.md").write_text(OK_CHAPTER.replace(
        'print(f"ran with {profile} {device} {seed}")',
        'import os\nprint([os.environ.get(k) for k in '
        '("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "INFONCE_BOOK_PIPELINE")])'))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    res = pipeline.run_chapter("ok", profile="smoke", device="cpu", root=project, log=lambda m: None)
    cells = nbformat.read(res.notebook, as_version=4).cells
    out = "".join(o.get("text", "") for c in cells for o in c.get("outputs", []))
    assert f"['{pipeline.available_cores()}', 'PASSIVE', '1']" in out
    assert "OMP_WAIT_POLICY" not in __import__("os").environ  # the test process is left as it was
