"""Chapter 6, the generated sentences: the phrases the page's prose takes from the results (glued
with the numbers), worded with :func:`~infonce_book.experiment.prose.join_words` and
:func:`~infonce_book.experiment.prose.count_word` like every page's."""

from __future__ import annotations

import math

from ...experiment.prose import count_word, join_words

__all__ = ["one_temperature_note", "learned_embeddings_phrase", "verdict_summary", "kl_ratio_text",
           "stopped_text", "gap_change_text", "temperature_note", "kl_verdict_text", "failed_note",
           "seeds_text", "certificate_text"]


def one_temperature_note(taus) -> str:
    """A sentence (with a leading space) for a run at one temperature only, whose paragraphs
    then quote the same runs as "the lowest" and "the highest" temperature; ``""`` otherwise."""
    values = sorted({float(x) for x in taus})
    if len(values) > 1:
        return ""
    return (f" This run trained at one temperature only (τ = {values[0]:g}), so where the page compares "
            f"the lowest and the highest temperature below, both are that one (the full-size run "
            f"trains at two).")


def learned_embeddings_phrase(taus) -> str:
    """``"the learned embedding"`` for one training temperature, ``"the two learned embeddings
    (one per training temperature)"`` for two, and so on: the page's name for the embeddings it
    analyses, one per distinct tau."""
    n = len({float(x) for x in taus})
    if n == 1:
        return "the learned embedding"
    return f"the {count_word(n)} learned embeddings (one per training temperature)"


def verdict_summary(verdicts: dict) -> str:
    """``{tau: verdict}`` -> ``"equivalent at τ = 0.5"`` or ``"equivalent at τ = 0.5 and not
    shown at τ = 0.1"``: each temperature present once, the highest first."""
    return join_words([f"{verdicts[tau]} at τ = {tau:g}" for tau in sorted(verdicts, reverse=True)])


def kl_ratio_text(ratios: dict) -> str:
    """``{tau_train: largest KL/bound ratio}`` -> ``"0.203 for the embedding trained at τ = 0.5"``,
    or with more temperatures ``"0.203 for the embedding trained at τ = 0.5 and 0.150 for the one
    trained at τ = 0.1"`` (highest temperature first; ratios to three decimals)."""
    taus = sorted(ratios, reverse=True)
    parts = [f"{ratios[tau]:.3f} for the {'embedding' if i == 0 else 'one'} trained at τ = {tau:g}"
             for i, tau in enumerate(taus)]
    return join_words(parts)


def stopped_text(stopped: int, n: int) -> str:
    """How many of ``n`` runs the stopping rule ended: ``"all 3 runs met the rule"``, ``"no run
    met the rule"`` or ``"2 of 3 runs met the rule"``."""
    return (f"all {n} runs met the rule" if stopped == n else "no run met the rule" if stopped == 0
            else f"{stopped} of {n} runs met the rule")


def gap_change_text(low: float, high: float) -> str:
    """The clause (with a leading dash) that the equivalence paragraph adds when the interval
    ``(low, high)`` of the gap's change excludes 0 (the gap grew, or shrank); ``""`` otherwise."""
    return (" — the gap grew between the two values of k, since the interval lies above 0"
            if low > 0 else " — the gap shrank, since the interval lies below 0"
            if high < 0 else "")


def temperature_note(c1_lo: float, c1_hi: float, two_temperatures: bool) -> str:
    """The sentence on the temperatures' needs for negatives, when there are two and the lower one
    has the larger ``c1`` (nats, plug-in); ``""`` otherwise."""
    return ("The lower temperature needs more negatives for the same bias: its weights are more spread "
            "out, and c1 grows with their spread." if two_temperatures and c1_lo > c1_hi else "")


def kl_verdict_text(worst: float) -> str:
    """The temperature bound's verdict from the largest upper end of KL over bound: ``"holds with
    room to spare"`` (<= 0.5), ``"holds"`` (<= 1) or ``"is exceeded (see the records)"``."""
    return ("holds with room to spare" if worst <= 0.5 else "holds" if worst <= 1.0
            else "is exceeded (see the records)")


def failed_note(n_passed: int, n_records: int) -> str:
    """A sentence (with a leading space) pointing at the records that did not pass; ``""`` when
    all passed."""
    return ("" if n_passed == n_records else
            " The records that failed or were inconclusive are shown in the table above, not tuned away.")


def seeds_text(n: float) -> str:
    """The number of seeds of :func:`~infonce_book.theory.stats.seeds_needed` in words for the
    exercise's solution: ``"7"``, or why there is none (``n`` infinite)."""
    return str(int(n)) if math.isfinite(n) else "none: the mean change itself exceeds the margin"


def _cell(row) -> str:
    return f"({int(row.k):,}, {row.tau:g})"


def certificate_text(cert, n_images: int, n_heldout: int) -> str:
    """The sentences on the hold-out certificates (a table of
    :func:`~.ledger.ledger_certificates`): where each is informative (below the uniform search,
    the whole seed interval) and, where not, that its record fails and how many held-out images it
    would need."""
    good = cert[cert.passed].sort_values(["k", "tau"])
    bad = cert[~cert.passed].sort_values(["k", "tau"])
    parts = []
    if len(good):
        best = good.loc[good.cert.idxmin()]
        parts.append(
            f"The certificate lies below the uniform search, with its whole interval over seeds, at (k, τ) = "
            f"{join_words([_cell(r) for r in good.itertuples()])}; at {_cell(best)} it is {-best.cert:.2f} nats "
            f"below log(k + 1) (95% interval {-best.cert_high:.2f} to {-best.cert_low:.2f} nats below), from "
            f"{int(best.groups):,} groups of held-out images.")
    if len(bad):
        needs = [f"{r.needed:,.0f} at {_cell(r)}" if math.isfinite(r.needed)
                 else f"more than any data set at {_cell(r)} (its held-out risk is not below log(k + 1))"
                 for r in bad.itertuples()]
        groups = join_words(sorted({f"{int(g):,}" for g in bad.groups}, key=lambda g: -int(g.replace(",", ""))))
        parts.append(
            f"It is not informative at (k, τ) = {join_words([_cell(r) for r in bad.itertuples()])}, whose "
            f"{'records fail' if len(bad) > 1 else 'record fails'}: the {n_heldout:,} held-out images make only "
            f"{groups} groups of k + 1 there. Were the held-out losses to keep their measured mean and "
            f"spread, the held-out images it would need are about {join_words(needs)}; the whole data set "
            f"has {n_images:,}.")
    return " ".join(parts)
