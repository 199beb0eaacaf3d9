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

* ``exact``: a two-sided rule on a deterministic value (no standard error and no sample size:
  quadrature, enumeration, a closed form): the interval is the numerical error band of the
  computed value, and the check is that the predicted value lies inside it. :meth:`Ledger.record`
  records a two-sided rule on such a value with this kind.

The **verdict** is one of :data:`VERDICTS`, decided by :func:`decide` from rules fixed in
advance (before any run), never from the values seen:

* ``failed``: the rule's comparison fails (the interval excludes the prediction, lies on the
  wrong side of it, or reaches outside the equivalence margin);
* ``inconclusive``: the comparison holds but the interval is too wide to decide. For a
  *sampled* measurement (one with a standard error) under ``two-sided``: the interval's width
  exceeds the rule's ``resolution`` (declared in the rule; by default ``|predicted|``, so an
  interval that cannot tell the prediction from zero decides nothing, and a prediction of 0
  needs a declared resolution or an equivalence test). Under ``one-sided`` or ``bound``: the
  rule compares the *lenient* end of the interval (the end that need not clear the threshold,
  e.g. ``ci_high >= 0`` for "at least 0") or the measured value, the other end lies on the
  other side (the interval straddles the threshold), and the width exceeds the resolution.
  ``exact`` and ``equivalence`` records are never inconclusive (the first has no sampling
  error; the second passes only when the whole interval is inside the margin);
* ``passed``: otherwise.

Each record carries ``kind``, the ``rule`` (its parameters, as a dictionary), ``passed`` (true
exactly when the verdict is ``passed``) and the ``verdict``.

**No record decides by a resolution of zero.** A sampled record whose verdict would use the
default resolution ``|predicted|`` while the prediction is 0 (a slope, a difference) could never
pass: :meth:`Ledger.record` refuses it (:func:`undeclared_zero_resolution`), so that each such
record declares, in code before its data exist, its ``resolution``, a strict one-sided test or an
equivalence margin.

**Record ids name their chapter.** A chapter gives each record an id (e.g.
``C5-rademacher-slope-k``, the claim it tests and what it measures); the ledger stores it under
the id :func:`book_id` derives from the chapter's number (``4.C5-rademacher-slope-k`` in Chapter 4),
and keeps the chapter's id as the record's ``alias`` for anyone who cited it (:func:`find_record`
finds a record by either).

A chapter run writes its records to ``<ledger_dir>/<chapter>.json`` (atomically, one file per
chapter); ``infonce-book ledger`` prints the records of the last build.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .ledger_audit import zero_predictions_without_resolution
from .paths import atomic_write_text, ledger_dir
from .record_ids import book_id, chapter_number, find_record, record_alias

__all__ = ["FIELDS", "KINDS", "VERDICTS", "PENDING_ZERO_RESOLUTION", "Ledger", "Record", "Rule", "book_id",
           "chapter_number", "decide", "find_record", "format_table", "load_records", "record_alias", "summary_line",
           "undeclared_zero_resolution", "verdict", "verdict_counts", "zero_predictions_without_resolution"]

# pandas and tabulate are imported where they are used, and the theory's Estimate (SciPy, torch)
# not at all: `infonce-book ledger` reads and prints records without them
# (tests/pipeline/test_cli_light.py).

FIELDS = ("claim", "id", "chapter", "params", "quantity", "predicted", "measured", "ci_low",
          "ci_high", "passed", "profile", "device", "seed", "se", "n", "level", "kind", "rule", "verdict", "alias")

#: The kinds of verdict rule, and what each tests (the reproducibility appendix shows this table).
KINDS = {
    "two-sided": "the interval of the measured value contains the predicted value",
    "one-sided": ("one end of the interval (or the measured value itself) lies on the stated side of the "
                  "predicted value"),
    "bound": ("the predicted value is a bound, and the measured value (or one end of its interval) lies on its "
              "side of it"),
    "equivalence": "the interval lies within a margin, declared before the run, of the predicted value",
    "exact": "the predicted value lies within the numerical error band of a deterministic (not sampled) value",
}

#: The verdicts, and what each means (the reproducibility appendix shows this table).
VERDICTS = {
    "passed": "the rule holds and the interval is narrow enough to decide",
    "failed": "the rule does not hold: the interval excludes the prediction, lies on the wrong side of it, "
              "or reaches outside the margin",
    "inconclusive": "the rule holds only because the interval is too wide to decide: wider than the declared "
                    "resolution (by default the size of the predicted value), or straddling the threshold of a "
                    "one-sided test",
}
#: Verdict strings of records written before the three verdicts existed.
_OLD_VERDICTS = {"pass": "passed", "FAIL": "failed"}
_SIDES = ("measured", "ci_low", "ci_high")
_OPS = {"<=": lambda a, b: a <= b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, ">": lambda a, b: a > b}


#: Ids (prefixes) of records that still predict 0 with no declared resolution, tolerated until the
#: branch that redesigns them is merged (then this is empty): Chapter 5's PAC-Bayes slack in k.
PENDING_ZERO_RESOLUTION: tuple = ()


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
        resolution: for ``two-sided``, ``one-sided`` and ``bound``, the widest interval that still
            decides (> 0, in the units of the measured value); ``None``: ``|predicted|`` (see
            :func:`decide`).
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
    resolution: float | None = None

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
        if self.resolution is not None and not (math.isfinite(self.resolution) and self.resolution > 0):
            raise ValueError(f"resolution must be a finite number > 0, got resolution={self.resolution!r}")
        if not math.isfinite(self.tol):
            raise ValueError(f"tol must be finite, got tol={self.tol!r}")

    @classmethod
    def two_sided(cls, note: str = "", resolution: float | None = None) -> Rule:
        """Passed when ``ci_low <= predicted <= ci_high`` (and the interval decides, :func:`decide`)."""
        return cls("two-sided", note=note, resolution=resolution)

    @classmethod
    def exact(cls, note: str = "") -> Rule:
        """Passed when the predicted value lies in the error band of a deterministic value."""
        return cls("exact", note=note)

    @classmethod
    def one_sided(cls, side: str, op: str, tol: float = 0.0, note: str = "",
                  resolution: float | None = None) -> Rule:
        """Passed when ``<side> <op> predicted + tol`` (``side``: measured, ci_low or ci_high)."""
        return cls("one-sided", side=side, op=op, tol=float(tol), note=note, resolution=resolution)

    @classmethod
    def bound(cls, side: str, op: str, tol: float = 0.0, note: str = "",
              resolution: float | None = None) -> Rule:
        """Like :meth:`one_sided`, for a prediction that is a bound on the measured quantity."""
        return cls("bound", side=side, op=op, tol=float(tol), note=note, resolution=resolution)

    @classmethod
    def equivalence(cls, margin: float, note: str = "") -> Rule:
        """Passed when ``predicted - margin < ci_low`` and ``ci_high < predicted + margin``."""
        return cls("equivalence", margin=float(margin), note=note)

    def passed(self, predicted: float, measured: float, ci_low: float, ci_high: float) -> bool:
        """Whether the rule's comparison holds for a record's values (see :func:`decide` for the
        verdict, which also asks whether the interval is narrow enough to decide)."""
        if self.kind in ("two-sided", "exact"):
            return ci_low <= predicted <= ci_high
        if self.kind == "equivalence":
            return predicted - self.margin < ci_low and ci_high < predicted + self.margin
        value = {"measured": measured, "ci_low": ci_low, "ci_high": ci_high}[self.side]
        return bool(_OPS[self.op](value, predicted + self.tol))

    def describe(self) -> str:
        """The rule in words (the ledger's tables show it)."""
        if self.kind == "two-sided":
            text = "passed when ci_low <= predicted <= ci_high"
        elif self.kind == "exact":
            text = "passed when predicted lies in the error band [ci_low, ci_high] of the computed value"
        elif self.kind == "equivalence":
            text = f"passed when the interval lies inside predicted -+ {self.margin:g}"
        else:
            tol = f" {'+' if self.tol > 0 else '-'} {abs(self.tol):g}" if self.tol else ""
            text = f"passed when {self.side} {self.op} predicted{tol}"
        return f"{self.kind}: {text}" + (f"; {self.note}" if self.note else "")

    def as_dict(self) -> dict:
        """The rule's parameters (plain JSON), with its description."""
        out = {"kind": self.kind, "description": self.describe()}
        for name in ("side", "op", "margin", "resolution"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.tol:
            out["tol"] = self.tol
        if self.note:
            out["note"] = self.note
        return out


def _straddles(rule: Rule, predicted: float, ci_low: float, ci_high: float) -> bool:
    """Whether a one-sided/bound rule compares its lenient end (or the measured value) and the
    interval reaches across the threshold ``predicted + tol``."""
    threshold = predicted + rule.tol
    strict = "ci_low" if rule.op in (">=", ">") else "ci_high"
    if rule.side == strict:
        return False
    far = ci_low if strict == "ci_low" else ci_high
    return not _OPS[rule.op](far, threshold)


def undeclared_zero_resolution(rule: Rule, predicted: float, ci_low: float, ci_high: float, *,
                                sampled: bool) -> bool:
    """Whether a record's verdict would rest on a resolution of zero: a sampled record under a
    ``two-sided`` rule, or a ``one-sided``/``bound`` rule that compares the lenient end of its
    interval (or the measured value), with a prediction of 0 and no declared ``resolution``. Such a
    record is inconclusive at every sample size (its interval always has a width > 0), so
    :meth:`Ledger.record` refuses it. ``exact`` and ``equivalence`` rules, and one-sided rules on the
    strict end of the interval (``ci_low > 0``: a significance test), decide without a resolution.

    Examples:
        >>> undeclared_zero_resolution(Rule.two_sided(), 0.0, -0.05, 0.18, sampled=True)
        True
        >>> undeclared_zero_resolution(Rule.two_sided(resolution=0.2), 0.0, -0.05, 0.18, sampled=True)
        False
        >>> undeclared_zero_resolution(Rule.one_sided("ci_low", ">"), 0.0, 0.01, 0.04, sampled=True)
        False
        >>> undeclared_zero_resolution(Rule.one_sided("ci_high", ">="), 0.0, -0.006, 0.003, sampled=True)
        True
    """
    if not sampled or rule.kind in ("exact", "equivalence") or rule.resolution is not None:
        return False
    if predicted != 0.0:
        return False
    if rule.kind == "two-sided":
        return True
    strict = "ci_low" if rule.op in (">=", ">") else "ci_high"
    return rule.side != strict


def decide(rule: Rule, predicted: float, measured: float, ci_low: float, ci_high: float, *,
           sampled: bool) -> str:
    """The verdict of a record: ``passed``, ``failed`` or ``inconclusive`` (module docstring).

    Args:
        rule: the record's :class:`Rule`.
        predicted, measured, ci_low, ci_high: the record's values.
        sampled: whether the measured value has sampling error (a standard error > 0 or a
            sample size); a deterministic value is never inconclusive.

    Examples:
        >>> decide(Rule.two_sided(), 5.0, 6.1, -38.5, 53.1, sampled=True)
        'inconclusive'
        >>> decide(Rule.two_sided(), 5.0, 4.0, 1.65, 6.35, sampled=True)
        'passed'
        >>> decide(Rule.one_sided("ci_high", ">="), 0.0, -0.002, -0.006, 0.003, sampled=True)
        'inconclusive'
    """
    if not rule.passed(predicted, measured, ci_low, ci_high):
        return "failed"
    if not sampled or rule.kind in ("exact", "equivalence"):
        return "passed"
    resolution = abs(predicted) if rule.resolution is None else rule.resolution
    too_wide = ci_high - ci_low > resolution
    if rule.kind == "two-sided":
        return "inconclusive" if too_wide else "passed"
    return "inconclusive" if too_wide and _straddles(rule, predicted, ci_low, ci_high) else "passed"


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
    alias: str = ""


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
               ci_low=None, ci_high=None, rule: Rule | None = None, sampled: bool | None = None) -> Record:
        """Add (or replace, by ``id``) a record and write the chapter's ledger file.

        ``measured`` is an :class:`~infonce_book.theory.stats.Estimate` (its interval is the
        record's unless ``ci_low``/``ci_high`` are given), or a number with ``ci_low`` and
        ``ci_high`` (a deterministic value with its error bounds). ``rule`` (a :class:`Rule`;
        default :meth:`Rule.two_sided`) decides the verdict (:func:`decide`); a two-sided rule on a
        deterministic value is recorded as :meth:`Rule.exact`. ``sampled`` says whether the
        measured value has sampling error; ``None`` (the default): it has when it is an
        Estimate with a standard error > 0 or a sample size, not when it is a number (give
        ``sampled=True`` for a number whose interval is a sampling interval, e.g. a fit's).

        ``id`` is the chapter's name for the record; the ledger stores it under
        :func:`book_id` (its chapter's number in front) and keeps ``id`` as the record's ``alias``.

        Raises:
            ValueError: a value that is not finite, ``ci_low > ci_high``, no interval, or a
                sampled record that predicts 0 with no declared resolution
                (:func:`undeclared_zero_resolution`).
            TypeError: ``rule`` that is not a :class:`Rule`.
        """
        rule = Rule.two_sided() if rule is None else rule
        if not isinstance(rule, Rule):
            raise TypeError(f"record {id!r}: rule must be a Rule, got {type(rule).__name__}")
        se = n = level = None
        # An Estimate's module is loaded when one exists: no import here (`infonce-book ledger` stays light).
        stats = sys.modules.get("infonce_book.theory.stats")
        if stats is not None and isinstance(measured, stats.Estimate):
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
        if sampled is None:
            sampled = bool(se) or n is not None
        if rule.kind == "two-sided" and not sampled:
            rule = Rule.exact(note=rule.note)
        if (undeclared_zero_resolution(rule, predicted, ci_low, ci_high, sampled=sampled)
                and not id.startswith(PENDING_ZERO_RESOLUTION)):
            raise ValueError(f"record {id!r} predicts 0 under a {rule.kind} rule with no declared resolution: it "
                             f"could never decide; declare Rule(..., resolution=...) or an equivalence margin "
                             f"before the run")
        alias, id = id, book_id(self.chapter, id)
        outcome = decide(rule, predicted, measured, ci_low, ci_high, sampled=sampled)
        params = json.loads(json.dumps(params, default=float))  # plain JSON types only
        rec = Record(claim=claim, id=id, chapter=self.chapter, params=params, quantity=quantity,
                     predicted=predicted, measured=measured, ci_low=ci_low, ci_high=ci_high,
                     passed=outcome == "passed", profile=self.profile, device=self.device, seed=int(self.seed),
                     se=None if se is None else float(se), n=None if n is None else int(n),
                     level=None if level is None else float(level), kind=rule.kind, rule=rule.as_dict(),
                     verdict=outcome, alias=alias)
        self.records = [r for r in self.records if r.id != id] + [rec]
        self.save()
        return rec

    def save(self) -> None:
        atomic_write_text(self.path, json.dumps([asdict(r) for r in self.records], indent=2))

    def by_id(self) -> dict:
        """``{id: record}`` over this run's records, each under its id and its alias (old id)."""
        out = {r.id: r for r in self.records}
        out.update({r.alias: r for r in self.records if r.alias})
        return out

    def table(self):
        """The records as a pandas DataFrame (for display in the chapter)."""
        import pandas as pd  # [book] extra; heavy: only chapters display tables

        return pd.DataFrame([asdict(r) for r in self.records], columns=FIELDS)


def load_records(directory: Path | None = None) -> list[dict]:
    """All records in ``directory`` (default: the ledger folder), ordered by chapter then id."""
    directory = Path(directory) if directory else ledger_dir()
    out = []
    for p in sorted(directory.glob("*.json")):
        out.extend(json.loads(p.read_text(encoding="utf-8")))
    return out


def verdict(record: dict) -> str:
    """The record's verdict (one of :data:`VERDICTS`), as recorded (records written before the
    three verdicts existed: ``pass`` -> ``passed``, ``FAIL`` -> ``failed``)."""
    v = record.get("verdict") or ("passed" if record["passed"] else "failed")
    return _OLD_VERDICTS.get(v, v)


def verdict_counts(records) -> dict:
    """``{"passed": P, "failed": F, "inconclusive": I}`` over ``records`` (dicts or :class:`Record`)."""
    out = dict.fromkeys(VERDICTS, 0)
    for r in records:
        out[verdict(r if isinstance(r, dict) else asdict(r))] += 1
    return out


def _named(ids: list[str]) -> str:
    return " (" + ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "") + ")" if ids else ""


def summary_line(records: list[dict]) -> str:
    """``"N records: P passed, I inconclusive, F failed"``, and the ids of the failed and the
    inconclusive ones (at most five of each named)."""
    failed = [r["id"] for r in records if verdict(r) == "failed"]
    unsure = [r["id"] for r in records if verdict(r) == "inconclusive"]
    n_pass = len(records) - len(failed) - len(unsure)
    return (f"{len(records)} records: {n_pass} passed, {len(unsure)} inconclusive{_named(unsure)}, "
            f"{len(failed)} failed{_named(failed)}")


def format_table(records: list[dict]) -> str:
    """Records as a plain-text table for people (the id, then the old id when it differs)."""
    from tabulate import tabulate  # [book] extra: only `infonce-book ledger` prints tables

    rows = [[r["chapter"], r["id"] + (f" (was {r['alias']})" if r.get("alias") not in (None, "", r["id"]) else ""),
             r["quantity"], f"{r['predicted']:.6g}", f"{r['measured']:.6g}",
             f"[{r['ci_low']:.6g}, {r['ci_high']:.6g}]", r.get("kind", "two-sided"), verdict(r),
             r["profile"], r["device"], r["seed"]] for r in records]
    return tabulate(rows, headers=["chapter", "id", "quantity", "predicted", "measured", "interval", "kind",
                                   "verdict", "profile", "device", "seed"]) + "\n" + summary_line(records)
