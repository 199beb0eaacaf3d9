"""The ledger's rules read from the chapters' code before any data exist: :func:`zero_predictions_without_resolution`
finds a record that predicts 0 and declares no resolution (see :mod:`.ledger`, "No record decides by a
resolution of zero"; :meth:`.ledger.Ledger.record` checks the same at run time)."""

from __future__ import annotations

import ast

__all__ = ["zero_predictions_without_resolution"]


def zero_predictions_without_resolution(source: str, filename: str = "<source>") -> list[str]:
    """The ``.record(...)`` calls in Python ``source`` that predict a literal 0 under a rule that
    would need a resolution and declare none (:func:`undeclared_zero_resolution`, read from the
    code before any data exist): no ``rule`` (two-sided by default) or a literal ``Rule.two_sided``,
    ``Rule.one_sided`` or ``Rule.bound`` on the lenient end without ``resolution=``. A record with
    an exact measured value (``Estimate.exact``, ``ci_low=ci_high``) needs none. Calls whose
    rule is a variable are left to :meth:`Ledger.record`'s check at run time.

    Returns ``"<filename>:<line>: <record id>"`` for each such call.

    Examples:
        >>> zero_predictions_without_resolution("led.record(id='a', predicted=0.0, measured=fit)")
        ["<source>:1: 'a'"]
        >>> zero_predictions_without_resolution(
        ...     "led.record(id='a', predicted=0.0, measured=fit, rule=Rule.two_sided(resolution=0.2))")
        []
    """
    def literal_zero(node) -> bool:
        try:
            return float(ast.literal_eval(node)) == 0.0
        except (ValueError, TypeError, SyntaxError):
            return False

    out = []
    for node in ast.walk(ast.parse(source, filename)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "record"):
            continue
        kw = {k.arg: k.value for k in node.keywords}
        if "predicted" not in kw or not literal_zero(kw["predicted"]):
            continue
        measured = kw.get("measured")
        if (isinstance(measured, ast.Call) and isinstance(measured.func, ast.Attribute)
                and measured.func.attr == "exact"):
            continue
        if "ci_low" in kw and "ci_high" in kw and ast.dump(kw["ci_low"]) == ast.dump(kw["ci_high"]):
            continue  # a number without an interval: deterministic
        rule = kw.get("rule")
        if rule is None:
            needs = True
        elif isinstance(rule, ast.Call) and isinstance(rule.func, ast.Attribute) and rule.func.attr in (
                "two_sided", "one_sided", "bound"):
            rkw = {k.arg for k in rule.keywords}
            args = [ast.literal_eval(a) if isinstance(a, ast.Constant) else None for a in rule.args]
            if rule.func.attr == "two_sided":
                needs = "resolution" not in rkw
            else:
                side, op = (args + [None, None])[:2]
                strict = "ci_low" if op in (">=", ">") else "ci_high"
                needs = "resolution" not in rkw and side != strict
        else:
            needs = False  # equivalence, exact, or a variable: checked when the record is made
        if needs:
            rid = ast.unparse(kw["id"]) if "id" in kw else "?"
            out.append(f"{filename}:{node.lineno}: {rid}")
    return out
