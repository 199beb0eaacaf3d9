"""Chapter set-up helpers (``infonce_book.experiment.setup``)."""

from infonce_book.experiment.setup import log_grid


def test_log_grid():
    assert log_grid(3, per_octave=1) == [1, 2, 4, 8]
    assert log_grid(2, per_octave=2) == [1, 2, 3, 4]
