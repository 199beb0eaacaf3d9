"""The training loop (``infonce_book.learning.loop``): the order of its hooks, the schedule, the stop."""

import math

import pytest
import torch

from infonce_book.learning.loop import adam_loop, cosine_schedule


def _param(value=0.0):
    return torch.tensor(value, dtype=torch.float64, requires_grad=True)


def test_a_stop_hook_ends_the_run_after_the_step_at_which_it_is_true():
    x, logged = _param(), []
    taken = adam_loop([x], lambda t: x * 1.0, 100, 0.1, log=lambda t, loss: logged.append(t),
                      stop=lambda t: t == 4)
    assert taken == 5 and logged == [0, 1, 2, 3, 4]
    y = _param()
    assert adam_loop([y], lambda t: y, 3, 0.1, stop=lambda t: False) == 3  # never true: all steps


def test_the_schedule_sets_the_rate_of_each_step():
    # f(x) = x has gradient 1 at every step, so Adam's bias-corrected moments are m = v = 1 and
    # step t moves x by -lr_t / (1 + eps), eps = 1e-8: after 3 steps at 0.1, 0.2, 0.3, x = -0.6 / (1 + 1e-8).
    x, seen = _param(), []
    adam_loop([x], lambda t: x, 3, 0.5, schedule=lambda t: 0.1 * (t + 1),
              after_step=lambda t: seen.append(float(x.detach())))
    assert seen == pytest.approx([-0.1 / (1 + 1e-8), -0.3 / (1 + 1e-8), -0.6 / (1 + 1e-8)], rel=1e-12, abs=0)
    y = _param()
    adam_loop([y], lambda t: y, 3, 0.5)  # without a schedule every step is at lr
    assert float(y.detach()) == pytest.approx(-1.5 / (1 + 1e-8), rel=1e-12)


def test_the_hooks_run_in_the_documented_order_around_the_step():
    x, calls = _param(1.0), []

    def hook(name):  # records (name, step, x at the call); returns False (a stop that never stops)
        return lambda t, *loss: calls.append((name, t, float(x.detach()))) and False

    def objective(t):
        hook("objective")(t)
        return x * x

    adam_loop([x], objective, 2, 0.1, schedule=lambda t: hook("schedule")(t) or 0.1, before_step=hook("before"),
              after_step=hook("after"), log=lambda t, loss: calls.append(("log", t, float(loss))), stop=hook("stop"))
    assert [c[0] for c in calls] == ["schedule", "objective", "before", "after", "log", "stop"] * 2
    assert [c[1] for c in calls] == [0] * 6 + [1] * 6
    assert calls[2][2] == 1.0 and calls[3][2] == pytest.approx(0.9, rel=1e-6)  # before / after Adam's step
    assert calls[4][2] == 1.0  # the logged loss x^2 is the one the step was taken on (x = 1)


def test_a_vector_of_losses_is_minimised_as_its_sum_and_logged_detached():
    a, b, logged = _param(), _param(), []
    adam_loop([a, b], lambda t: torch.stack([a, 3.0 * b]), 1, 0.1, log=lambda t, loss: logged.append(loss))
    assert logged[0].shape == (2,) and not logged[0].requires_grad
    # each coordinate gets the gradient of the sum (1 and 3): Adam's first step is -lr sign(g) for both
    assert float(a.detach()) == pytest.approx(-0.1, rel=1e-6) and float(b.detach()) == pytest.approx(-0.1, rel=1e-6)


def test_the_cosine_schedule_by_hand():
    rate = cosine_schedule(0.2, 4)
    expected = [0.2, 0.1 * (1 + math.sqrt(0.5)), 0.1, 0.1 * (1 - math.sqrt(0.5))]
    assert [rate(t) for t in range(4)] == pytest.approx(expected, rel=1e-14)
    with pytest.raises(ValueError, match="lr"):
        cosine_schedule(0.0, 4)


def test_adam_loop_rejects_bad_input():
    x = _param()
    with pytest.raises(ValueError, match="steps"):
        adam_loop([x], lambda t: x, 0, 0.1)
    with pytest.raises(ValueError, match="lr"):
        adam_loop([x], lambda t: x, 1, -0.1)
    with pytest.raises(ValueError, match="parameter"):
        adam_loop([], lambda t: x, 1, 0.1)
