"""What a reader needs to rerun the book, generated at every build from what the build did:
:func:`rerun_box` (the "Rerun this chapter" admonition after each chapter's title: the commands,
the parameters the page ran with, the device, the recorded and measured times, the jupytext source)
and :func:`appendix_markdown` (the reproducibility appendix: versions, device, commit, each chapter's
run and time, the whole claims ledger with verdicts, the benchmark results).
"""

from __future__ import annotations

import platform
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import torch

from .. import __version__
from ..experiment.ledger import KINDS, VERDICTS, load_records, verdict, verdict_counts
from ..experiment.profiles import PROFILES
from ..utils.device import describe, resolve_device
from .timings import RECORDED_PROFILES, TIMES_FILE, fmt_seconds, load_timings, read_json, seconds_of

#: Distributions whose versions the appendix reports (PyPI names).
PACKAGES = ("infonce-book", "torch", "numpy", "scipy", "sympy", "pandas", "jupyter-book", "myst-nb",
            "sphinx-proof", "sphinx-exercise", "sphinx", "sphinx-book-theme", "papermill", "jupytext")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def _run_info(build_dir: Path, chapter: str) -> dict:
    """The parameters and time of a chapter's last successful run (``<chapter>.run.json``)."""
    return read_json(Path(build_dir) / "notebooks" / f"{chapter}.run.json")


def _uses_device(source: Path) -> bool:
    """Whether a chapter passes the chosen device (``ctx.device``) to its experiments."""
    return "ctx.device" in Path(source).read_text(encoding="utf-8")


def rerun_box(chapter: str, source: Path, build_dir: Path, md_download: str, commit: str, recorded: dict) -> str:
    """The "Rerun this chapter" admonition (MyST markdown) for one executed chapter; it quotes the
    ``recorded`` times (:func:`~infonce_book.pipeline.timings.load_recorded`) as the expected time,
    and this build folder's own (``<build>/timings.json``)."""
    run_info, timings = _run_info(build_dir, chapter), load_timings(build_dir)
    ran = (f"profile `{run_info.get('profile', '?')}`, device `{run_info.get('device', '?')}`, "
           f"seed `{run_info.get('seed', '?')}`")
    took = run_info.get("seconds")
    here = "; ".join(f"`{p}` {fmt_seconds(timings.get(p, {}).get(chapter), 'not measured in this build')}"
                     for p in PROFILES)
    m, times = recorded.get("machine", {}), TIMES_FILE.as_posix()
    expected = ("; ".join(f"`{p}` {fmt_seconds(seconds_of(recorded, p, chapter))}" for p in RECORDED_PROFILES)
                + f" on a {m.get('cores', '?')}-core {m.get('cpu', 'CPU')} (`{times}`, the same times as the "
                  "README's table)" if recorded.get("profiles")
                else f"no recorded times: `make timings` writes `{times}`")
    device_note = (
        "Its torch experiments run on the chosen device: `--device auto` uses a CUDA GPU when one is "
        "present and the CPU otherwise (`--device cuda` insists on a GPU; `--profile full` is sized for "
        "one GPU). Symbolic checks and quadrature references always run on the CPU."
        if _uses_device(source) else
        "It runs on the CPU only (no experiment uses the device).")
    return f"""::::{{admonition}} Rerun this chapter
:class: tip dropdown infonce-rerun

This page shows a run with {ran}{f', which took {fmt_seconds(took)}' if took is not None else ''}
(infonce_book {__version__}, commit `{commit}`). To rerun it, from a clone of the repository:

```bash
.venv/bin/infonce-book run {chapter} --profile standard --device auto --seed 0
```

or, creating `.venv` first if needed (README, "The two commands"):

```bash
make chapter CHAPTER={chapter} PROFILE=standard DEVICE=auto SEED=0
```

The executed notebook goes to `_build/notebooks/{chapter}.ipynb` and its claims to
`_build/ledger/{chapter}.json`; the same profile and seed give the same numbers.

**Device.** {device_note}

**Time.** Expected: {expected}. On the machine that built this page
(`_build/timings.json`, slower when other processes shared its CPU): {here}.

**Source.** The jupytext notebook {{download}}`{chapter}.md <{md_download}>` (open it in Jupyter
with jupytext installed), or the executed notebook from the download button at the top of the page.
::::
"""


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _counts(records: list[dict]) -> str:
    c = verdict_counts(records)
    return (f"{len(records)} claims recorded: {c['passed']} passed, {c['inconclusive']} inconclusive, "
            f"{c['failed']} failed.")


def ledger_markdown(records: list[dict]) -> str:
    """The claims ledger as MyST tables (one per chapter) with counts; failed claims listed again."""
    if not records:
        return "No ledger records were found in this build.\n"
    runs = sorted({(r["profile"], r["device"], r["seed"]) for r in records}, key=str)
    several = len(runs) > 1  # then each row says its run
    lines = [f"**{_counts(records)}**", ""]
    if not several:
        lines += ["Every record comes from a run with profile `{}`, device `{}`, seed `{}`.".format(*runs[0]), ""]
    for chapter in dict.fromkeys(r["chapter"] for r in records):
        rows = [r for r in records if r["chapter"] == chapter]
        lines += [f"### `{chapter}`", "", _counts(rows), "", "| id | quantity | predicted | measured | interval "
                  "| test | verdict |" + (" run |" if several else ""), "|" + "---|" * (8 if several else 7)]
        for r in rows:
            v = verdict(r)
            lines.append(f"| `{_cell(r['id'])}` | {_cell(r['quantity'])} | {r['predicted']:.6g} "
                         f"| {r['measured']:.6g} | [{r['ci_low']:.6g}, {r['ci_high']:.6g}] "
                         f"| {r.get('kind', 'two-sided')} | {v if v == 'passed' else f'**{v}**'} |"
                         + (f" {r['profile']}/{r['device']}/{r['seed']} |" if several else ""))
        lines.append("")
    kinds = [kind for kind in KINDS if any(r.get("kind", "two-sided") == kind for r in records)]
    lines += ["The *test* column says how each verdict was decided:", "",
              *(f"* **{kind}**: the rule holds when {KINDS[kind]}." for kind in kinds), "",
              "The *verdict* column is decided by rules fixed before any run, the same for every record:", "",
              *(f"* **{name}**: {meaning}." for name, meaning in VERDICTS.items()), "",
              "A deterministic value (quadrature, enumeration, a closed form) has no sampling error: its "
              "interval is the numerical error band, and its verdict is passed or failed, never "
              "inconclusive; an equivalence test passes only when its whole interval lies inside the "
              "margin, so it is never inconclusive either.", ""]
    for name, title in (("failed", "**Failed claims** (shown, not tuned away; each chapter discusses its own):"),
                        ("inconclusive", "**Inconclusive claims** (the interval is too wide to decide; "
                                         "a larger run narrows it):")):
        rows = [r for r in records if verdict(r) == name]
        if rows:
            lines += [title, "", *(f"* `{_cell(r['id'])}` ({_cell(r['chapter'])}): predicted {r['predicted']:.6g}, "
                                   f"measured {r['measured']:.6g}, interval [{r['ci_low']:.6g}, {r['ci_high']:.6g}]"
                                   for r in rows), ""]
    return "\n".join(lines)


def benchmarks_markdown(root: Path, page_dir: str = "book") -> str:
    """MyST ``{include}`` directives for every ``benchmarks/results/*/results.md`` (or a sentence
    saying there is none), their headings shifted to start at level 4."""
    parts = []
    for path in sorted((Path(root) / "benchmarks" / "results").glob("*/results.md")):
        rel = path.relative_to(root).as_posix()
        levels = [len(m.group(1)) for m in re.finditer(r"^(#{1,6})\s", path.read_text(encoding="utf-8"), re.M)]
        offset = max(0, 4 - min(levels)) if levels else 0
        parts.append(f"### `{rel}`\n\n```{{include}} {'../' * len(Path(page_dir).parts)}{rel}\n"
                     f":heading-offset: {offset}\n:relative-images:\n```\n")
    return "\n".join(parts) or ("No benchmark results were found (no `benchmarks/results/*/results.md` in the "
                                "repository this book was built from).\n")


def appendix_markdown(root: Path, build_dir: Path, chapters: dict[str, Path], *, profile: str,
                      device: str, seed: int, commit: str) -> str:
    """The generated reproducibility appendix (MyST markdown; see module docstring)."""
    versions, timings = package_versions(), load_timings(build_dir)
    out = ["## This build", "",
           f"* **infonce_book** {versions['infonce-book']}, git commit `{commit}`"
           + (" (the work tree had uncommitted changes)" if commit.endswith("+dirty") else ""),
           f"* **profile** `{profile}`, **seed** `{seed}`, **device** requested `{device}`, used "
           f"`{describe(resolve_device(device))}`",
           f"* **torch** {torch.__version__} (CUDA build: {torch.version.cuda or 'none'}; CUDA available: "
           f"{torch.cuda.is_available()})",
           f"* **Python** {versions['python']} on {platform.system()} {platform.machine()}",
           "", "## Package versions", "", "| package | version |", "|---|---|",
           *(f"| {name} | {v} |" for name, v in versions.items()),
           "", "## Chapters: execution and device", "",
           "Wall-clock time of each chapter's papermill execution, per profile, on the machine that "
           "built this book (`_build/timings.json`; \u2014 where a profile was not run in this build "
           "folder), and the parameters of the run shown in the book.", "",
           "| chapter | shown run | uses the device | " + " | ".join(f"`{p}`" for p in PROFILES) + " |",
           "|---|---|---|" + "---|" * len(PROFILES)]
    for stem, source in chapters.items():
        info = _run_info(build_dir, stem)
        times = " | ".join(fmt_seconds(timings.get(p, {}).get(stem), "\u2014") for p in PROFILES)
        out.append(f"| {{doc}}`/{source.relative_to(root).with_suffix('').as_posix()}` "
                   f"| {info.get('profile', '?')}, {info.get('device', '?')}, seed {info.get('seed', '?')} "
                   f"| {'yes' if _uses_device(source) else 'no'} | {times} |")
    records = [r for r in load_records(Path(build_dir) / "ledger") if r.get("chapter") in chapters]
    out += ["", "Chapters that use the device run their torch experiments on `--device` (`auto`: a CUDA GPU "
            "when present, else the CPU); each chapter's first output line states the package version, "
            "commit, torch version and device it ran with.", "",
            "## The claims ledger", "",
            "Every quantitative claim of the book, as recorded by the chapters in this build "
            "(`_build/ledger/*.json`; `infonce-book ledger --format table` prints the same). *predicted* "
            "is what the derivation says, *measured* what the experiment found, with its interval.", "",
            ledger_markdown(records), "## Benchmarks", "", benchmarks_markdown(root)]
    return "\n".join(out)
