"""Real data: scikit-learn's handwritten digits with augmentations (:mod:`~.digits`)."""

__all__ = ["digits"]
