"""The result bundle: at most 8 files (:data:`~.machine.BUNDLE`), what the GPU machine returns.

* :func:`write_bundle` -- ``environment.json``, ``timings.json``, ``ledger.json`` (every finished
  chapter's claims), ``tests.xml``, the benchmark's three files and ``log.txt``, written also when a
  stage failed;
* :func:`check_bundle` -- what a rehearsal's bundle lacks (every file, every stage passed, every
  chapter's ledger records, the tool chain from the carried wheels, torch from the interpreter's
  own packages, the package from ``src/``);
* :func:`junit_summary` -- the counts of a JUnit report (and the GPU tests skipped for want of CUDA).
"""

from __future__ import annotations

import json
import shutil
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from .limits import tail
from .machine import BUNDLE, STAGES

__all__ = ["check_bundle", "junit_summary", "write_bundle"]


def junit_summary(path: Path) -> dict:
    """``{tests, failures, errors, skipped, skipped_gpu}`` of a JUnit XML report (``skipped_gpu``:
    skips whose message names CUDA), or ``{error}`` when there is no readable report."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as err:
        return {"error": f"no test report: {err}"}
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    out = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    out["skipped_gpu"] = sum(1 for case in root.iter("testcase") for sk in case.findall("skipped")
                             if "CUDA" in (sk.get("message") or ""))
    return out


def write_bundle(out: Path, *, timings: dict, environment: dict, build: Path, work: Path, bench_out: Path,
                 logs: Path, since: float) -> list[Path]:
    """Write the bundle into ``out`` (files of an earlier bundle removed first) and return its files.

    ``timings``/``environment``: the run's records (``timings`` gets the notebooks' own times from
    ``<build>/timings.json``); ``build``: the chapters' build folder (its ``ledger/``); ``work``: holds
    ``tests.xml``; ``bench_out``: the benchmark's results; ``logs``: the stages' logs (each one's
    last 200 kB go into ``log.txt``); ``since``: the run's start (``time.time()``), older benchmark
    or test files are not copied.
    """
    out.mkdir(parents=True, exist_ok=True)
    for name in BUNDLE:
        (out / name).unlink(missing_ok=True)
    environment["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    pipeline_timings = build / "timings.json"
    if pipeline_timings.is_file():
        timings["notebook_seconds"] = json.loads(pipeline_timings.read_text(encoding="utf-8"))
    records = []
    for p in sorted((build / "ledger").glob("*.json")):
        records.extend(json.loads(p.read_text(encoding="utf-8")))
    files = {"environment.json": json.dumps(environment, indent=2), "timings.json": json.dumps(timings, indent=2),
             "ledger.json": json.dumps(records, indent=2)}
    for name, text in files.items():
        (out / name).write_text(text + "\n", encoding="utf-8")
    for src, name in ((work / "tests.xml", "tests.xml"), (bench_out / "results.csv", "benchmark.csv"),
                      (bench_out / "results.md", "benchmark.md"), (bench_out / "throughput.png", "benchmark.png")):
        if src.is_file() and src.stat().st_mtime >= since:
            shutil.copyfile(src, out / name)
    parts = [f"===== {log.name}\n{tail(log, 200_000)}"
             for log in sorted(logs.glob("*.log"), key=lambda p: p.stat().st_mtime)]
    (out / "log.txt").write_text("\n".join(parts), encoding="utf-8")
    written = [out / n for n in BUNDLE if (out / n).is_file()]
    assert len(written) <= 8
    return written


def _module_problems(env: dict, peer: bool) -> list[str]:
    problems = []
    mods = env.get("probe", {}).get("modules", {})
    for mod in ("papermill", "jupytext", "nbformat", "nbclient", "ipykernel", "myst_nb.ext.glue") + (
            ("info_nce",) if peer else ()):
        if mods.get(mod, {}).get("origin") != "carried":
            problems.append(f"{mod} not loaded from the carried wheels: {mods.get(mod)}")
    for mod in ("torch", "numpy", "pandas", "pytest"):
        if mods.get(mod, {}).get("origin") != "image":
            problems.append(f"{mod} not loaded from the interpreter's own packages: {mods.get(mod)}")
    if mods.get("infonce_book", {}).get("origin") != "src":
        problems.append(f"infonce_book not loaded from src/: {mods.get('infonce_book')}")
    if env.get("probe", {}).get("unmet_requirements"):
        problems.append(f"unmet requirements: {env['probe']['unmet_requirements']}")
    return problems


def check_bundle(out: Path, chapters: list[str], *, runner: str = "papermill", peer: bool = True,
                 no_claims: frozenset[str] = frozenset()) -> list[str]:
    """What a rehearsal's bundle lacks (an empty list when it is complete); ``peer``: whether the
    benchmark's peer library was carried; ``no_claims``: executed pages that record no claims (the
    back matter, e.g. the robustness page), which need no ledger records."""
    problems = []
    names = sorted(p.name for p in Path(out).iterdir() if p.is_file() and p.name in BUNDLE)
    if len(names) > 8:
        problems.append(f"{len(names)} files in the bundle (at most 8)")
    problems += [f"missing {name}" for name in BUNDLE if name not in names]
    try:
        timings = json.loads((out / "timings.json").read_text(encoding="utf-8"))
        env = json.loads((out / "environment.json").read_text(encoding="utf-8"))
        ledger = json.loads((out / "ledger.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        return problems + [f"unreadable bundle: {err}"]
    for stage in timings["stages"]:
        if stage["status"] != "passed":
            problems.append(f"stage {stage['name']}: {stage['status']} ({stage.get('note', '')})")
    if [s["name"] for s in timings["stages"]] != list(STAGES):
        problems.append(f"stages {[s['name'] for s in timings['stages']]}, expected {list(STAGES)}")
    ran = {c["chapter"]: c for c in timings["chapters"]}
    for chapter in chapters:
        c = ran.get(chapter)
        if c is None or c["status"] != "passed" or c["runner"] != runner:
            problems.append(f"chapter {chapter}: {c}")
    with_records = {r["chapter"] for r in ledger}
    problems += [f"no ledger records of {chapter}" for chapter in chapters
                 if chapter not in with_records and chapter not in no_claims]
    problems += _module_problems(env, peer)
    tests = timings["stages"][1].get("tests", {}) if len(timings["stages"]) > 1 else {}
    if not tests.get("tests") or tests.get("failures") or tests.get("errors"):
        problems.append(f"test report: {tests}")
    return problems
