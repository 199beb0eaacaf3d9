"""Monte Carlo estimators: intervals that cover the exact value, seeding, and the fits."""


import pytest
import torch

from infonce_book.models import VonMisesFisher
from infonce_book.theory.estimators import monte_carlo_bias
from infonce_book.theory.exact import exact_bias


@pytest.mark.parametrize("k, variant", [(1, "standard"), (16, "standard"), (300, "standard"), (16, "decoupled")])
def test_monte_carlo_interval_covers_the_exact_bias(k, variant):
    # Fixed seeds; with 99.9% intervals a miss would signal a bug, not bad luck.
    m = VonMisesFisher(3, 4.0)
    r = monte_carlo_bias(m, k, 0.5, 3000, variant=variant, device="cpu", seed=11, level=0.999, chunk_size=64)
    exact = exact_bias(m, [k], 0.5, variant)[0]
    for est in (r["plain"], r["cv"]):
        lo, hi = est.ci
        assert lo <= exact <= hi


def test_control_variates_shrink_the_interval_at_large_k():
    m = VonMisesFisher(3, 4.0)
    r = monte_carlo_bias(m, 512, 0.5, 2000, device="cpu", seed=0)
    assert r["cv"].se < r["plain"].se / 20


def test_monte_carlo_is_seeded():
    m = VonMisesFisher(3, 2.0)
    a = monte_carlo_bias(m, 8, 0.5, 500, device="cpu", seed=5)
    b = monte_carlo_bias(m, 8, 0.5, 500, device="cpu", seed=5)
    c = monte_carlo_bias(m, 8, 0.5, 500, device="cpu", seed=6)
    assert a["cv"].mean == b["cv"].mean and a["plain"].mean == b["plain"].mean
    assert a["cv"].mean != c["cv"].mean


def test_float32_monte_carlo_agrees_with_float64():
    m = VonMisesFisher(3, 4.0)
    r32 = monte_carlo_bias(m, 64, 0.5, 2000, device="cpu", seed=1, dtype=torch.float32)
    exact = exact_bias(m, [64], 0.5)[0]
    lo, hi = r32["cv"].ci
    assert lo - 1e-5 <= exact <= hi + 1e-5










def test_monte_carlo_rejects_bad_input():
    m = VonMisesFisher(3, 1.0)
    with pytest.raises(ValueError, match="k"):
        monte_carlo_bias(m, 0, 0.5, 10, device="cpu")
    with pytest.raises(ValueError, match="n_tuples"):
        monte_carlo_bias(m, 2, 0.5, 0, device="cpu")
    with pytest.raises(ValueError, match="device"):
        monte_carlo_bias(m, 2, 0.5, 10, device="tpu")
