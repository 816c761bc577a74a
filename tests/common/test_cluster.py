"""`pipeline.common.cluster.fan_out`: the one split-then-gather over Ray (the human examples, the
human evaluation and the harness use it), on this process and on a real local cluster."""

from __future__ import annotations

import os
import time

import pytest
import ray

from pipeline.common.cluster import fan_out


def slow_square(value: int, delay: float, offset: int) -> tuple[int, int]:
    """value² + offset after `delay` seconds, with the process that computed it."""
    time.sleep(delay)
    return value * value + offset, os.getpid()


def refuse(value: int) -> int:
    if value == 2:
        raise ValueError(f"no {value}")
    return value


CALLS = [(value, 0.4 * (4 - value)) for value in range(5)]  # the first call finishes last


def test_on_one_process_the_calls_run_here_in_order() -> None:
    seen: list[int] = []
    results = fan_out(slow_square, [(v, 0.0) for v, _ in CALLS], workers=1, shared=(10,),
                      on_result=lambda index, result: seen.append(index))  # fmt: skip
    assert [value for value, _ in results] == [10, 11, 14, 19, 26]
    assert {pid for _, pid in results} == {os.getpid()}
    assert seen == [0, 1, 2, 3, 4]
    assert not ray.is_initialized()


@pytest.mark.cluster
def test_on_ray_results_come_back_in_call_order_whatever_the_finish_order() -> None:
    seen: list[int] = []
    results = fan_out(slow_square, CALLS, workers=2, shared=(10,), on_result=lambda index, result: seen.append(index))
    assert [value for value, _ in results] == [10, 11, 14, 19, 26]
    assert os.getpid() not in {pid for _, pid in results}  # the work ran in Ray's workers
    assert sorted(seen) == [0, 1, 2, 3, 4] and seen != [0, 1, 2, 3, 4]  # progress as each arrives
    assert not ray.is_initialized()  # the cluster it started is gone


@pytest.mark.cluster
def test_an_exception_in_a_call_reaches_the_caller_with_its_type() -> None:
    with pytest.raises(ValueError, match="no 2"):
        fan_out(refuse, [(value,) for value in range(4)], workers=2)
    assert not ray.is_initialized()
