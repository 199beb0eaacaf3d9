"""The claims ledger: one machine-readable record per quantitative claim of the book.

Each record is ``{claim, id, chapter, params, quantity, predicted, measured, ci_low, ci_high,
passed, profile, device, seed, se, n, level}``. ``predicted`` is what the derivation says;
``measured`` what the experiment found, as an :class:`~infonce_book.theory.stats.Estimate`
(its mean, the interval ``[ci_low, ci_high]`` at ``level``, its standard error ``se`` and the
number of samples ``n``; a 95% confidence interval for Monte Carlo measurements; for
deterministic ones, the numerical error plus the declared truncation error of the prediction, as
the record's chapter explains, with ``se`` 0 and ``n`` null). The verdict is
``passed = ci_low <= predicted <= ci_high``, unless the chapter states another rule.

A chapter run writes its records to ``<ledger_dir>/<chapter>.json`` (atomically, one file per
chapter); ``infonce-book ledger`` prints the records of the last build.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd
from tabulate import tabulate

from ..theory.stats import Estimate
from .paths import atomic_write_text, ledger_dir

FIELDS = ("claim", "id", "chapter", "params", "quantity", "predicted", "measured", "ci_low",
          "ci_high", "passed", "profile", "device", "seed", "se", "n", "level")


@dataclass
class Record:
    claim: str
    id: str
    chapter: str
    params: dict
    quantity: str
    predicted: float
    measured: float
    ci_low: float
    ci_high: float
    passed: bool
    profile: str
    device: str
    seed: int
    se: float | None = None
    n: int | None = None
    level: float | None = None


def _finite_float(x, name: str) -> float:
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"ledger field {name} must be finite, got {x!r}")
    return x


@dataclass
class Ledger:
    """The records of one chapter run (see module docstring)."""

    chapter: str
    profile: str
    device: str
    seed: int
    records: list = field(default_factory=list)

    @property
    def path(self) -> Path:
        return ledger_dir() / f"{self.chapter}.json"

    def record(self, *, claim: str, id: str, quantity: str, predicted, measured, params: dict,
               ci_low=None, ci_high=None, passed: bool | None = None) -> Record:
        """Add (or replace, by ``id``) a record and write the chapter's ledger file.

        ``measured`` is an :class:`~infonce_book.theory.stats.Estimate` (its interval is the
        record's unless ``ci_low``/``ci_high`` are given), or a number with ``ci_low`` and
        ``ci_high`` (a deterministic value with its error bounds). ``passed`` defaults to
        ``ci_low <= predicted <= ci_high``.
        """
        se = n = level = None
        if isinstance(measured, Estimate):
            lo, hi = measured.ci
            ci_low = lo if ci_low is None else ci_low
            ci_high = hi if ci_high is None else ci_high
            se, n, level = measured.se, measured.n, measured.level
            measured = measured.mean
        if ci_low is None or ci_high is None:
            raise ValueError(f"record {id!r}: give measured as an Estimate, or ci_low and ci_high")
        predicted = _finite_float(predicted, "predicted")
        measured = _finite_float(measured, "measured")
        ci_low, ci_high = _finite_float(ci_low, "ci_low"), _finite_float(ci_high, "ci_high")
        if ci_low > ci_high:
            raise ValueError(f"ci_low={ci_low} > ci_high={ci_high} for record {id!r}")
        if passed is None:
            passed = ci_low <= predicted <= ci_high
        params = json.loads(json.dumps(params, default=float))  # plain JSON types only
        rec = Record(claim=claim, id=id, chapter=self.chapter, params=params, quantity=quantity,
                     predicted=predicted, measured=measured, ci_low=ci_low, ci_high=ci_high,
                     passed=bool(passed), profile=self.profile, device=self.device, seed=int(self.seed),
                     se=None if se is None else float(se), n=None if n is None else int(n),
                     level=None if level is None else float(level))
        self.records = [r for r in self.records if r.id != id] + [rec]
        self.save()
        return rec

    def save(self) -> None:
        atomic_write_text(self.path, json.dumps([asdict(r) for r in self.records], indent=2))

    def table(self):
        """The records as a pandas DataFrame (for display in the chapter)."""
        return pd.DataFrame([asdict(r) for r in self.records], columns=FIELDS)


def load_records(directory: Path | None = None) -> list[dict]:
    """All records in ``directory`` (default: the ledger folder), ordered by chapter then id."""
    directory = Path(directory) if directory else ledger_dir()
    out = []
    for p in sorted(directory.glob("*.json")):
        out.extend(json.loads(p.read_text()))
    return out


def verdict(record: dict) -> str:
    """``pass`` or ``FAIL``, with ``*`` for a one-sided claim (its ``params.rule`` says so)."""
    one_sided = "one-sided" in str(record.get("params", {}).get("rule", ""))
    return ("pass" if record["passed"] else "FAIL") + ("*" if one_sided else "")


def summary_line(records: list[dict]) -> str:
    """``"N records: P passed, F failed"``, and the ids of the failed ones (at most five named)."""
    failed = [r["id"] for r in records if not r["passed"]]
    line = f"{len(records)} records: {len(records) - len(failed)} passed, {len(failed)} failed"
    if failed:
        line += " (" + ", ".join(failed[:5]) + (", ..." if len(failed) > 5 else "") + ")"
    return line


def format_table(records: list[dict]) -> str:
    """Records as a plain-text table for people."""
    rows = [[r["chapter"], r["id"], r["quantity"], f"{r['predicted']:.6g}", f"{r['measured']:.6g}",
             f"[{r['ci_low']:.6g}, {r['ci_high']:.6g}]", verdict(r),
             r["profile"], r["device"], r["seed"]] for r in records]
    summary = "\n" + summary_line(records)
    if any(v[6].endswith("*") for v in rows):
        summary += ("\n* one-sided claim: 'predicted' is a limit, not a point value; the record's "
                    "params.rule states the verdict rule")
    return tabulate(rows, headers=["chapter", "id", "quantity", "predicted", "measured", "interval", "verdict",
                                   "profile", "device", "seed"]) + summary
