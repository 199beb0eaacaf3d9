"""The InfoNCE loss, in log space (book: notation page, eq. ``notation-infonce``).

See :mod:`infonce_book.losses.explicit` for the forms with explicit negatives.
"""

from .explicit import ACCUMULATE_DTYPES, REDUCTIONS, VARIANTS, info_nce, info_nce_from_similarities, info_nce_streaming

__all__ = ["ACCUMULATE_DTYPES", "REDUCTIONS", "VARIANTS", "info_nce", "info_nce_from_similarities",
           "info_nce_streaming"]
