"""The device route: the four stages within their time budgets, then the bundle.

:class:`Run` runs ``setup`` (``nvidia-smi``, the carried wheels installed with ``pip install
--no-index --no-deps --target <work>/site``, the probe), ``tests`` (:data:`~.machine.TEST_FILES`,
JUnit report), ``benchmark`` (``benchmarks/bench_infonce.py``) and ``chapters`` (each chapter
through papermill, ``python -m infonce_book run``, or the direct runner when the tool chain does
not import; each gets a fair share of the time left, and a chapter stopped at its share gets a
second try with the time the others left over). Every stage runs with ``PYTHONPATH=<work>/site:src``
in a process group that is stopped at the stage's budget; the bundle is written whatever happened.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ...experiment.paths import git_commit
from .bundle import junit_summary, write_bundle
from .limits import fair_share, run_limited
from .machine import (
    BENCH_ARGS,
    DEVICE_BUDGET_S,
    NOTEBOOK_MODULES,
    RESERVE_S,
    ROOT,
    STAGE_BUDGET_S,
    STAGES,
    TEST_FILES,
    project_name_version,
    say,
)

__all__ = ["Run", "install_wheels", "main_run"]

#: How the check starts its own helpers (probe, direct runner) in the stages' environment.
SELF = (sys.executable, "-m", "infonce_book.pipeline.gpu_check")


def _failed(record: dict) -> bool:
    """Whether a ledger record failed (``failed``, or ``FAIL`` in records of older builds; an
    ``inconclusive`` record did not fail)."""
    return (record.get("verdict") or ("passed" if record["passed"] else "failed")) in ("failed", "FAIL")


def install_wheels(wheels: list[Path], site: Path, env: dict, timeout: float, log: Path) -> dict:
    """Install ``wheels`` into a fresh ``site`` folder (no index, no dependencies) within
    ``timeout`` seconds, and give the package (which runs from ``src/``) a ``dist-info`` with its
    version, as an editable install would. Returns :func:`~.limits.run_limited`'s result."""
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True)
    result = {"status": "passed", "rc": 0, "seconds": 0.0}
    if wheels:
        result = run_limited([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-compile",
                              "--no-cache-dir", "--disable-pip-version-check", "--quiet", "--target", site, *wheels],
                             env=env, timeout=timeout, log_path=log)
    name, version = project_name_version()
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    (info / "INSTALLER").write_text("gpu_check (the package itself runs from src/)\n", encoding="utf-8")
    return result


def _nvidia_smi() -> str:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return "not found"
    try:
        return subprocess.run([smi], capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as err:
        return f"failed: {err}"


def stage_env(site: Path, work: Path) -> dict:
    """The stages' environment: this one with ``PYTHONPATH=<site>:src[:what was set]``, the
    experiment cache, Jupyter's and IPython's folders under ``work``, no progress bars, ``Agg``;
    no ledger or build folder of the caller's (each chapter run sets its own)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    extra = os.environ.get("PYTHONPATH")
    env.update({"PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "src")] + ([extra] if extra else [])),
                "GPU_CHECK_SITE": str(site), "INFONCE_BOOK_ROOT": str(ROOT),
                "INFONCE_BOOK_NO_PROGRESS": "1", "INFONCE_BOOK_CACHE_DIR": str(work / "cache"),
                "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg",
                "JUPYTER_RUNTIME_DIR": str(work / "jupyter-runtime"), "IPYTHONDIR": str(work / "ipython")})
    env.pop("INFONCE_BOOK_LEDGER_DIR", None)
    env.pop("INFONCE_BOOK_BUILD_DIR", None)
    return env


class Run:
    """One run of the device route; every stage records into ``self.timings``."""

    def __init__(self, args):
        self.args = args
        self.t0 = time.monotonic()
        self.deadline = self.t0 + args.budget - RESERVE_S
        self.work = Path(args.work).resolve()
        self.out = Path(args.out).resolve()
        self.site, self.build = self.work / "site", self.work / "build"
        self.logs = self.work / "logs"
        self.bench_out = (Path(args.bench_out).resolve() if args.bench_out else
                          ROOT / "benchmarks" / "results" / "cuda" if args.device.startswith("cuda") else
                          self.work / "benchmark")
        self.timings = {"mode": args.mode, "profile": args.profile, "device": args.device, "seed": args.seed,
                        "budget_s": args.budget, "stages": [], "chapters": [], "skipped": []}
        self.environment = {"mode": args.mode, "argv": sys.argv[1:], "commit": git_commit(ROOT),
                            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        self.runner = None
        self.cuda_ok = True
        self.env = stage_env(self.site, self.work)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def budget(self, stage: str) -> float:
        """The stage's budget, scaled with the run's (a rehearsal on a shared CPU gets more time)."""
        scale = max(1.0, self.args.budget / DEVICE_BUDGET_S)
        return min(STAGE_BUDGET_S.get(stage, 1e9) * scale, self.left())

    def record(self, name: str, result: dict, note: str = "") -> dict:
        entry = {"name": name, **result}
        if note:
            entry["note"] = note
        self.timings["stages"].append(entry)
        say(f"=== {name}: {entry['status']} ({entry.get('seconds', 0):.0f} s of {entry.get('budget_s', 0):.0f})"
            + (f" - {note}" if note else ""))
        return entry

    def skip(self, name: str, why: str) -> None:
        self.timings["skipped"].append(f"{name}: {why}")
        self.record(name, {"status": "skipped", "seconds": 0.0, "budget_s": 0.0}, why)

    # -- stages --------------------------------------------------------------------------------

    def _probe(self, timeout: float, log: Path) -> dict:
        probe = subprocess.run([*SELF, "probe"], env=self.env, cwd=ROOT, capture_output=True, text=True, encoding="utf-8", errors="replace",
                               timeout=max(timeout, 10))
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(probe.stderr)
        try:
            return json.loads(probe.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            return {"error": probe.stdout[-2000:] + probe.stderr[-2000:]}

    def stage_setup(self) -> None:
        t0, budget = time.monotonic(), self.budget("setup")
        log = self.logs / "setup.log"
        self.environment["nvidia_smi"] = _nvidia_smi()
        wheel_dir = Path(self.args.wheels).resolve()
        wheels = sorted(wheel_dir.glob("*.whl"))
        self.environment["wheels"] = {"folder": str(wheel_dir), "count": len(wheels),
                                      "mib": round(sum(w.stat().st_size for w in wheels) / 2**20, 2),
                                      "files": [w.name for w in wheels]}
        inst = install_wheels(wheels, self.site, self.env, budget, log)
        notes = [] if wheels else [f"no carried wheels in {wheel_dir} (run `make gpu-wheels` where pip works)"]
        if inst["status"] != "passed":
            notes.append(f"installing the carried wheels {inst['status']} (see log)")
        self.environment["probe"] = self._probe(budget - (time.monotonic() - t0), log)
        mods = self.environment["probe"].get("modules", {})
        missing = [m for m in NOTEBOOK_MODULES if "error" in mods.get(m, {"error": "?"})]
        self.runner = self.args.runner if self.args.runner != "auto" else ("direct" if missing else "papermill")
        if missing:
            notes.append(f"not importable: {', '.join(missing)}; chapters run through the direct runner")
        self.environment["chapter_runner"] = self.runner
        status = "passed"
        for mod in ("torch", "infonce_book"):
            if "error" in mods.get(mod, {"error": "?"}):
                status = "failed"
                notes.append(f"{mod} does not import: {mods.get(mod, {}).get('error')}")
        if self.args.device.startswith("cuda") and not self.environment["probe"].get("torch", {}).get("cuda_available"):
            status, self.cuda_ok = "failed", False
            notes.append("torch sees no CUDA device")
        unmet = self.environment["probe"].get("unmet_requirements", [])
        if unmet:
            notes.append(f"{len(unmet)} unmet requirement(s) of carried wheels (environment.json)")
        if inst["status"] != "passed" or (missing and wheels):
            status = "failed"
        self.record("setup", {"status": status, "seconds": round(time.monotonic() - t0, 1), "budget_s": round(budget)},
                    "; ".join(notes))

    def stage_tests(self) -> None:
        budget = self.budget("tests")
        if budget < 10:
            return self.skip("tests", "no time left")
        report = self.work / "tests.xml"
        report.unlink(missing_ok=True)
        files = self.args.test_files or list(TEST_FILES)
        res = run_limited([sys.executable, "-m", "pytest", *files, "-q", "-rs", "-p", "no:cacheprovider",
                           f"--junitxml={report}", "-o", "junit_family=xunit2"],
                          env=self.env, timeout=budget, log_path=self.logs / "tests.log")
        summary = junit_summary(report)
        note = ", ".join(f"{k} {v}" for k, v in summary.items())
        if self.args.device.startswith("cuda") and summary.get("skipped_gpu"):
            res["status"] = "failed"
            note += "; GPU tests were skipped on the GPU machine"
        res["tests"] = summary
        self.record("tests", res, note)

    def stage_benchmark(self) -> None:
        budget = self.budget("benchmark")
        if budget < 20:
            return self.skip("benchmark", "no time left")
        dev = "cuda" if self.args.device.startswith("cuda") else "cpu"
        args = self.args.bench_args.split() if self.args.bench_args else BENCH_ARGS[dev]
        res = run_limited([sys.executable, ROOT / "benchmarks" / "bench_infonce.py", "--device", self.args.device,
                           "--out", self.bench_out, *args],
                          env=self.env, timeout=budget, log_path=self.logs / "benchmark.log")
        self.record("benchmark", res, f"results in {self.bench_out}")

    def _chapter_list(self) -> tuple[list[str], str]:
        listing = subprocess.run([sys.executable, "-m", "infonce_book", "chapters"], env=self.env, cwd=ROOT,
                                 capture_output=True, text=True, encoding="utf-8", errors="replace", timeout=120)
        known = [line.split("\t")[0] for line in listing.stdout.splitlines() if line.strip()]
        return (self.args.chapters.split(",") if self.args.chapters else known), listing.stderr

    def stage_chapters(self) -> None:
        t0, budget = time.monotonic(), self.left()
        chapters, errors = self._chapter_list()
        if not chapters:
            self.record("chapters", {"status": "failed", "seconds": 0.0, "budget_s": 0.0},
                        f"no chapters listed: {errors[-500:]}")
            return
        shutil.rmtree(self.build, ignore_errors=True)
        (self.build / "ledger").mkdir(parents=True)
        results = {}
        for i, chapter in enumerate(chapters):
            results[chapter] = self._chapter(chapter, fair_share(self.left(), len(chapters) - i), attempt=1)
        # A second try for chapters stopped at their share, with the time the others left over:
        # their finished experiment tables are in the cache (keyed by configuration and src/), so
        # the new attempt goes on where the first one stopped.
        again = [c for c in chapters if results[c]["status"] == "timed out"]
        for i, chapter in enumerate(again):
            share = fair_share(self.left(), len(again) - i, floor_s=30.0)
            if share:
                results[chapter] = self._chapter(chapter, share, attempt=2)
        for chapter in chapters:
            res = results[chapter]
            self.timings["chapters"].append(res)
            if res["status"] == "skipped":
                self.timings["skipped"].append(f"chapter {chapter}: no time left")
            elif res["status"] == "timed out":
                self.timings["skipped"].append(f"chapter {chapter}: stopped after {res['seconds']:.0f} s "
                                               f"(attempt {res['attempt']})")
        statuses = [results[c]["status"] for c in chapters]
        status = "passed" if all(s == "passed" for s in statuses) else (
            "failed" if "failed" in statuses else "timed out")
        self.record("chapters", {"status": status, "seconds": round(time.monotonic() - t0, 1),
                                 "budget_s": round(budget)},
                    ", ".join(f"{c} {s}" for c, s in zip(chapters, statuses)))

    def _chapter(self, chapter: str, share: float, attempt: int) -> dict:
        """Run one chapter within ``share`` seconds (0: skipped); its result for ``timings``."""
        if share == 0:
            return {"chapter": chapter, "status": "skipped", "seconds": 0.0, "budget_s": 0.0,
                    "runner": self.runner, "attempt": attempt, "records": 0, "records_failed": 0}
        if self.runner == "papermill":
            cmd = [sys.executable, "-m", "infonce_book", "run", chapter, "--force"]
        else:
            cmd = [*SELF, "direct-chapter", chapter]
        cmd += ["--profile", self.args.profile, "--device", self.args.device, "--seed", str(self.args.seed),
                "--build-dir", self.build]
        say(f"--- {chapter}: {self.runner}, up to {share:.0f} s" + (f" (attempt {attempt})" if attempt > 1 else ""))
        res = run_limited(cmd, env=self.env, timeout=share, log_path=self.logs / f"chapter-{chapter}.log")
        ledger = self.build / "ledger" / f"{chapter}.json"
        if res["status"] != "passed":
            ledger.unlink(missing_ok=True)  # no records of a run that did not finish
        records = json.loads(ledger.read_text(encoding="utf-8")) if ledger.is_file() else []
        res.update(chapter=chapter, runner=self.runner, attempt=attempt, records=len(records),
                   records_failed=sum(_failed(r) for r in records))
        say(f"    {chapter}: {res['status']} in {res['seconds']:.0f} s, {len(records)} ledger records"
            + (f", {res['records_failed']} failed" if res["records_failed"] else ""))
        return res

    # -- the run -------------------------------------------------------------------------------

    def _fresh_cache(self) -> None:
        """An empty experiment cache, or a copy of ``--cache-from`` (a rehearsal that reuses the
        tables of a smoke build of the same tree: the chapters still execute, their runners load)."""
        cache = self.work / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        source = getattr(self.args, "cache_from", None)
        if source:
            shutil.copytree(Path(source).resolve(), cache)
            self.environment["experiment_cache"] = {"copied_from": str(Path(source).resolve()),
                                                    "entries": sum(1 for p in cache.iterdir() if p.is_file())}

    def _stages(self, stages: list[str]) -> None:
        try:
            self.stage_setup()
            for stage in STAGES[1:]:
                if stage not in stages:
                    self.skip(stage, "not asked for (--stages)")
                elif not self.cuda_ok:
                    self.skip(stage, "torch sees no CUDA device")
                else:
                    getattr(self, f"stage_{stage}")()
        except KeyboardInterrupt:
            self.timings["skipped"].append("interrupted")
        except Exception as err:  # the bundle is written whatever happened
            self.timings["skipped"].append(f"orchestrator error: {type(err).__name__}: {err}")
            self.timings.setdefault("errors", []).append(f"{type(err).__name__}: {err}")

    def execute(self) -> int:
        """Run the stages (``--stages``: a subset; setup always), write the bundle, print a summary;
        returns 0 only when every stage asked for passed."""
        start_wall = time.time()
        shutil.rmtree(self.logs, ignore_errors=True)  # nothing from an earlier run is reused
        self.logs.mkdir(parents=True)
        self._fresh_cache()
        stages = ["setup"] + (self.args.stages.split(",") if self.args.stages else list(STAGES[1:]))
        try:
            self._stages(stages)
        finally:
            self.timings["total_s"] = round(time.monotonic() - self.t0, 1)
            written = write_bundle(self.out, timings=self.timings, environment=self.environment, build=self.build,
                                   work=self.work, bench_out=self.bench_out, logs=self.logs, since=start_wall)
        ok = all(s["status"] == "passed" for s in self.timings["stages"] if s["name"] in stages)
        ok = ok and not self.timings.get("errors") and len(self.timings["stages"]) == len(STAGES)
        self._summary(written, ok)
        return 0 if ok else 1

    def _summary(self, written: list[Path], ok: bool) -> None:
        say(f"--- bundle ({len(written)} files) in {self.out}: {', '.join(p.name for p in written)}")
        for s in self.timings["stages"]:
            say(f"  {s['name']:<10} {s['status']:<10} {s.get('seconds', 0):6.0f} s")
        for c in self.timings["chapters"]:
            say(f"    {c['chapter']:<20} {c['status']:<10} {c.get('seconds', 0):6.0f} s  {c.get('records', 0)} records")
        for s in self.timings["skipped"]:
            say(f"  skipped: {s}")
        say(f"--- total {self.timings['total_s']:.0f} s of {self.args.budget} s: "
            + ("all stages passed" if ok else "NOT all stages passed"))


def main_run(args) -> int:
    """``gpu_check.py run``: the device route (:class:`Run`)."""
    return Run(args).execute()
