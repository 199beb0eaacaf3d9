"""The claims ledger: one machine-readable record per quantitative claim of the book.

Each record is ``{claim, id, chapter, params, quantity, predicted, measured, ci_low, ci_high,
passed, profile, device, seed, se, n, level, kind, rule, verdict}``. ``predicted`` is what the derivation says;
``measured`` what the experiment found, as an :class:`~infonce_book.theory.stats.Estimate`
(its mean, the interval ``[ci_low, ci_high]`` at ``level``, its standard error ``se`` and the
number of samples ``n``; a 95% confidence interval for Monte Carlo measurements; for
deterministic ones, the numerical error plus the declared truncation error of the prediction, as
the record's chapter explains, with ``se`` 0 and ``n`` null).

The verdict is decided here, in one place, from a structured :class:`Rule` that the chapter gives
(never by hand, never from a text): its ``kind`` is one of :data:`KINDS` --

* ``two-sided``: the interval contains the predicted value, ``ci_low <= predicted <= ci_high``
  (the default);
* ``one-sided``: one end of the interval (or the measured value) lies on one side of the
  predicted value, e.g. ``ci_high < predicted`` for "the slope is negative";
* ``bound``: the predicted value is a bound that the measured one must respect (the same test as
  ``one-sided``; the kind tells a reader that the prediction is an inequality, not a value);
* ``equivalence``: the interval lies inside ``(predicted - margin, predicted + margin)`` for a
  margin declared before the run (two one-sided tests when the interval is at level
  ``1 - 2 alpha``).

Each record carries ``kind``, the ``rule`` (its parameters, as a dictionary), ``passed`` and a
``verdict`` string (``pass`` or ``FAIL``).

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
          "ci_high", "passed", "profile", "device", "seed", "se", "n", "level", "kind", "rule", "verdict")

#: The kinds of verdict rule, and what each tests (the reproducibility appendix shows this table).
KINDS = {
    "two-sided": "the interval of the measured value contains the predicted value",
    "one-sided": "one end of the interval (or the measured value itself) lies on the stated side of the predicted value",
    "bound": "the predicted value is a bound, and the measured value (or one end of its interval) lies on its side of it",
    "equivalence": "the interval lies within a margin, declared before the run, of the predicted value",
}
_SIDES = ("measured", "ci_low", "ci_high")
_OPS = {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b}


@dataclass(frozen=True)
class Rule:
    """How a record's verdict is decided (see the module docstring). Build one with the class
    methods: :meth:`two_sided`, :meth:`one_sided`, :meth:`bound`, :meth:`equivalence`.

    Attributes:
        kind: one of :data:`KINDS`.
        side: for ``one-sided`` and ``bound``, the value compared with the prediction:
            ``"measured"``, ``"ci_low"`` or ``"ci_high"``.
        op: for ``one-sided`` and ``bound``, the comparison ``side op predicted + tol``: one of
            ``"<="``, ``"<"``, ``">="``, ``">"``.
        tol: added to the predicted value before the comparison (a declared numerical
            tolerance; 0 by default; negative to demand a strict margin).
        margin: for ``equivalence``, the margin (> 0, in the units of the measured value).
        note: what else a reader should know about the interval (e.g. a Bonferroni level).

    Examples:
        >>> Rule.one_sided("ci_high", "<").passed(0.0, -0.5, -0.7, -0.3)
        True
        >>> Rule.equivalence(0.02).passed(0.0, 0.01, -0.005, 0.025)
        False
        >>> Rule.two_sided().describe()
        'two-sided: passed when ci_low <= predicted <= ci_high'
    """

    kind: str = "two-sided"
    side: str | None = None
    op: str | None = None
    tol: float = 0.0
    margin: float | None = None
    note: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {list(KINDS)}, got kind={self.kind!r}")
        if self.kind in ("one-sided", "bound"):
            if self.side not in _SIDES:
                raise ValueError(f"side must be one of {list(_SIDES)} for a {self.kind} rule, got side={self.side!r}")
            if self.op not in _OPS:
                raise ValueError(f"op must be one of {list(_OPS)} for a {self.kind} rule, got op={self.op!r}")
        if self.kind == "equivalence" and not (self.margin is not None and math.isfinite(self.margin)
                                               and self.margin > 0):
            raise ValueError(f"an equivalence rule needs a finite margin > 0, got margin={self.margin!r}")
        if not math.isfinite(self.tol):
            raise ValueError(f"tol must be finite, got tol={self.tol!r}")

    @classmethod
    def two_sided(cls, note: str = "") -> Rule:
        """Passed when ``ci_low <= predicted <= ci_high``."""
        return cls("two-sided", note=note)

    @classmethod
    def one_sided(cls, side: str, op: str, tol: float = 0.0, note: str = "") -> Rule:
        """Passed when ``<side> <op> predicted + tol`` (``side``: measured, ci_low or ci_high)."""
        return cls("one-sided", side=side, op=op, tol=float(tol), note=note)

    @classmethod
    def bound(cls, side: str, op: str, tol: float = 0.0, note: str = "") -> Rule:
        """Like :meth:`one_sided`, for a prediction that is a bound on the measured quantity."""
        return cls("bound", side=side, op=op, tol=float(tol), note=note)

    @classmethod
    def equivalence(cls, margin: float, note: str = "") -> Rule:
        """Passed when ``predicted - margin < ci_low`` and ``ci_high < predicted + margin``."""
        return cls("equivalence", margin=float(margin), note=note)

    def passed(self, predicted: float, measured: float, ci_low: float, ci_high: float) -> bool:
        """The verdict for a record's values."""
        if self.kind == "two-sided":
            return ci_low <= predicted <= ci_high
        if self.kind == "equivalence":
            return predicted - self.margin < ci_low and ci_high < predicted + self.margin
        value = {"measured": measured, "ci_low": ci_low, "ci_high": ci_high}[self.side]
        return bool(_OPS[self.op](value, predicted + self.tol))

    def describe(self) -> str:
        """The rule in words (the ledger's tables show it)."""
        if self.kind == "two-sided":
            text = "passed when ci_low <= predicted <= ci_high"
        elif self.kind == "equivalence":
            text = f"passed when the interval lies inside predicted -+ {self.margin:g}"
        else:
            tol = f" {'+' if self.tol > 0 else '-'} {abs(self.tol):g}" if self.tol else ""
            text = f"passed when {self.side} {self.op} predicted{tol}"
        return f"{self.kind}: {text}" + (f"; {self.note}" if self.note else "")

    def as_dict(self) -> dict:
        """The rule's parameters (plain JSON), with its description."""
        out = {"kind": self.kind, "description": self.describe()}
        for name in ("side", "op", "margin"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.tol:
            out["tol"] = self.tol
        if self.note:
            out["note"] = self.note
        return out


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
    kind: str = "two-sided"
    rule: dict = field(default_factory=lambda: Rule().as_dict())
    verdict: str = ""


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
               ci_low=None, ci_high=None, rule: Rule | None = None) -> Record:
        """Add (or replace, by ``id``) a record and write the chapter's ledger file.

        ``measured`` is an :class:`~infonce_book.theory.stats.Estimate` (its interval is the
        record's unless ``ci_low``/``ci_high`` are given), or a number with ``ci_low`` and
        ``ci_high`` (a deterministic value with its error bounds). ``rule`` (a :class:`Rule`;
        default :meth:`Rule.two_sided`) decides ``passed``.

        Raises:
            ValueError: a value that is not finite, ``ci_low > ci_high``, no interval.
            TypeError: ``rule`` that is not a :class:`Rule`.
        """
        rule = Rule.two_sided() if rule is None else rule
        if not isinstance(rule, Rule):
            raise TypeError(f"record {id!r}: rule must be a Rule, got {type(rule).__name__}")
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
        passed = rule.passed(predicted, measured, ci_low, ci_high)
        params = json.loads(json.dumps(params, default=float))  # plain JSON types only
        rec = Record(claim=claim, id=id, chapter=self.chapter, params=params, quantity=quantity,
                     predicted=predicted, measured=measured, ci_low=ci_low, ci_high=ci_high,
                     passed=bool(passed), profile=self.profile, device=self.device, seed=int(self.seed),
                     se=None if se is None else float(se), n=None if n is None else int(n),
                     level=None if level is None else float(level), kind=rule.kind, rule=rule.as_dict(),
                     verdict="pass" if passed else "FAIL")
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
        out.extend(json.loads(p.read_text(encoding="utf-8")))
    return out


def verdict(record: dict) -> str:
    """The record's verdict string (``pass`` or ``FAIL``), as recorded."""
    return record.get("verdict") or ("pass" if record["passed"] else "FAIL")


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
             f"[{r['ci_low']:.6g}, {r['ci_high']:.6g}]", r.get("kind", "two-sided"), verdict(r),
             r["profile"], r["device"], r["seed"]] for r in records]
    return tabulate(rows, headers=["chapter", "id", "quantity", "predicted", "measured", "interval", "kind",
                                   "verdict", "profile", "device", "seed"]) + "\n" + summary_line(records)
