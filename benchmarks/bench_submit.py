"""What the mining driver spends per shard on its submissions (issue 31), by part:

- one actor call with a part (what the driver paid per worker per shard until the write tasks
  took the calls over: `DRIVER_SECONDS_PER_WORKER_CALL`);
- the registry's claim with L earlier shards named (`MiningJob.submit`: every shard in flight or
  just published, so L follows the job's window, 2 + 2 x workers);
- one task submission with a reference argument (read, prepare, write: `DRIVER_SECONDS_PER_SHARD`
  covers four of them).

    python -m benchmarks.bench_submit [--calls 2000] [--earlier 0 1000 10000 24000]

The driver process's CPU seconds (its Ray core worker's threads included) per submission, on a
local Ray cluster of this machine; the submissions are awaited in batches, as the driver's loop
does. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import ray


class Registry:
    """Stands for `GameRegistry`: takes a claim, answers nothing."""

    def claim(self, ordinal: int, identities: Any, earlier: list[Any]) -> int:
        return ordinal


class Worker:
    """Stands for `MiningWorker`: takes a part, answers nothing."""

    def analyse_part(self, part: Any) -> int:
        return 0


def write(shard: int, parts: Any, workers: Any) -> int:
    return shard


def per_call(calls: int, submit: Callable[[int], Any]) -> float:
    """Driver CPU seconds per submission: `calls` of them, awaited in batches of 100."""
    refs: list[Any] = []
    start = time.process_time()
    for index in range(calls):
        refs.append(submit(index))
        if len(refs) == 100:
            ray.get(refs)
            refs.clear()
    ray.get(refs)
    return (time.process_time() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--earlier", type=int, nargs="+", default=[0, 1000, 10000, 24000])
    args = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    registry: Any = ray.remote(num_cpus=0)(Registry).remote()
    worker: Any = ray.remote(num_cpus=0)(Worker).remote()
    write_task: Any = ray.remote(num_cpus=0)(write)
    part = ray.put([("a fen", "a move")] * 100)
    handles = ray.put([worker] * 1000)
    ray.get([registry.claim.remote(0, part, []), worker.analyse_part.remote(part)])
    found: dict[str, float] = {
        "actor_call_with_a_part": per_call(args.calls, lambda _: worker.analyse_part.remote(part)),
        "task_with_two_references": per_call(args.calls, lambda index: write_task.remote(index, part, handles)),
    }
    for count in args.earlier:
        earlier = [(before, [part]) for before in range(count)]
        calls = max(20, min(args.calls, 2_000_000 // max(1, count)))
        claim = functools.partial(registry.claim.remote, identities=part, earlier=earlier)
        found[f"claim_with_{count}_earlier"] = per_call(calls, claim)
    ray.shutdown()
    for name, seconds in found.items():
        print(f"{name:>28}: {seconds * 1e6:10.1f} us of driver CPU per submission")
    print(json.dumps(found))


if __name__ == "__main__":
    main()
