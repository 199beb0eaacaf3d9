"""Chapter 6, ``book/c6_digits.md``: real data, handwritten digits (claim C7, and claims C1-C3
measured on a learned embedding).

The page constructs one :class:`DigitsSetup` (the experiment's fixed choices) in its parameter
cell and passes it to the runners, and uses this package as ``chapter``:

* :mod:`.config` -- ``STEM``, ``SIZES`` (per profile), :func:`setup` and :class:`DigitsSetup`;
* :mod:`.runners` -- a configuration in, a tidy table out, cached (the trained embeddings'
  weights are part of :func:`train_embeddings`'s table);
* :mod:`.ledger` -- ``ledger_*``: tables into claims-ledger records, with their verdict rules;
* :mod:`.glue` -- the numbers the page's prose quotes and its summary tables (glued with
  :func:`infonce_book.experiment.style.glue_all`);
* :mod:`.prose` -- the sentences generated from the results; :mod:`.roles` -- the page's names
  (``lo``/``hi``, ``k1``/``k2``) for the profile's temperatures and ks;
* :mod:`.figures` -- ``fig_*``, the page's figures.

:func:`~infonce_book.theory.stats.seeds_needed` (the exercise on seeds) and
:class:`~infonce_book.learning.embeddings.SphereMLP` (the embedding) are re-exported for the page
and its tests.
"""

from ...learning.embeddings import SphereMLP
from ...theory.stats import seeds_needed
from .config import SIZES, STEM, DigitsSetup, setup
from .figures import fig_idea, fig_kl, fig_rate, fig_search, fig_training, fig_trends, fig_view
from .glue import (
    describe,
    exercise_numbers,
    false_negative_summary,
    needed_negatives,
    training_numbers,
    training_summary,
)
from .headers import HEADERS
from .ledger import (
    ledger_certificates,
    ledger_counts,
    ledger_gap,
    ledger_kl,
    ledger_kls,
    ledger_rate,
    ledger_rates,
)
from .prose import certificate_text, kl_ratio_text, learned_embeddings_phrase, one_temperature_note, verdict_summary
from .runners import (
    embedding_from_state,
    evaluate_embeddings,
    false_negative_bias,
    heldout_certificates,
    learned_kl,
    learned_rate,
    member_state,
    train_embeddings,
    view,
)

__all__ = [
    "HEADERS",
    # set-up
    "STEM", "SIZES", "setup", "DigitsSetup",
    # runners
    "train_embeddings", "evaluate_embeddings", "heldout_certificates", "member_state", "embedding_from_state",
    "learned_rate", "learned_kl", "false_negative_bias", "view",
    # ledger records
    "ledger_gap", "ledger_rate", "ledger_rates", "ledger_kl", "ledger_kls", "ledger_counts",
    "ledger_certificates",
    # the page's numbers and sentences
    "describe", "training_numbers", "training_summary", "needed_negatives", "exercise_numbers",
    "false_negative_summary", "one_temperature_note", "learned_embeddings_phrase", "verdict_summary",
    "kl_ratio_text", "certificate_text",
    # figures
    "fig_training", "fig_trends", "fig_rate", "fig_search", "fig_kl", "fig_view", "fig_idea",
    # re-exported
    "seeds_needed", "SphereMLP",
]
