"""Chapter 3's generated phrases: what the gap-against-temperature experiment shows, in words
that follow its intervals (the page glues them into its sentences)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["gap_shape", "slope_above_phrases"]


def gap_shape(summary: pd.DataFrame) -> str:
    """Where the normalised gap ``gap / B_k`` is smallest, as a phrase: "U-shaped" only when the
    intervals say so (the best temperature's interval lies below those at both ends).

    Args:
        summary: table from :func:`~.runners.gap_summary` (rows ordered by tau).
    """
    lo, hi = summary.iloc[0], summary.iloc[-1]
    best = summary.loc[summary.gap_over_range.idxmin()]
    interior = summary.tau.iloc[0] < best.tau < summary.tau.iloc[-1]
    separated = best.ratio_high < min(lo.ratio_low, hi.ratio_low)
    return ("smallest inside the range of temperatures (U-shaped: its interval lies below "
            "those at both ends)" if interior and separated else
            "smallest, as a point estimate, inside the range of temperatures, but its interval "
            "overlaps those at the ends (no shape is established)" if interior else
            "smallest at an end of the range of temperatures")


def slope_above_phrases(slope: float, low: float, high: float) -> dict:
    """The trend of ``gap / B_k`` above the optimal temperature, from the slope against
    ``log tau`` and its interval ``(low, high)`` (NaN when it cannot be estimated).

    Returns:
        ``above_trend`` ("grows again", "keeps falling" or "shows no clear trend") and
        ``above_text`` (the slope and its interval with that trend, or why there is none).
    """
    trend = "grows again" if low > 0 else "keeps falling" if high < 0 else "shows no clear trend"
    if np.isfinite(slope) and np.isfinite(low) and np.isfinite(high):
        text = (f"the slope is {slope:.4f} ({low:.4f} to {high:.4f}): "
                f"the gap relative to the range {trend}")
    else:
        text = "the slope cannot be estimated in this run (too few temperatures above it)"
    return {"above_trend": trend, "above_text": text}
