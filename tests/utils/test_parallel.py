"""utils.parallel: jobs on worker processes, results in the jobs' order, errors raised."""

import pytest

from infonce_book.utils.parallel import cpu_workers, map_processes


def test_results_come_back_in_the_order_of_the_jobs_on_one_or_two_processes():
    jobs = [{"job": i, "square": i * i} for i in range(7)]
    assert map_processes(dict, jobs, workers=2) == jobs  # dict(**job) is a copy of the job
    assert map_processes(dict, jobs, workers=1) == jobs


def test_a_failing_job_raises_its_error():
    with pytest.raises(TypeError):
        map_processes(int, [{"x": 1}, {"x": 2}], workers=2)  # int() takes no keyword 'x'


def test_the_number_of_workers_follows_the_environment(monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_WORKERS", "3")
    assert cpu_workers() == 3
    monkeypatch.setenv("INFONCE_BOOK_WORKERS", "0")
    with pytest.raises(ValueError, match="INFONCE_BOOK_WORKERS"):
        cpu_workers()
    monkeypatch.delenv("INFONCE_BOOK_WORKERS")
    assert 1 <= cpu_workers(limit=4) <= 4
