"""Where an engine's time goes: per kind of search, the calls, the nodes and the CPU seconds of the
engine process, read from /proc (every thread of it: a UCI engine searches on a thread of its
own). A backend keeps no meter unless one is given (`UciBackend.meter`); the cost benchmark
(`benchmarks/bench_position_cost.py`) gives one."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field


def process_cpu_ns(pid: int | None) -> int | None:
    """CPU nanoseconds run so far by every thread of process `pid` (`schedstat`: the scheduler's
    own count, not clock ticks), or None where /proc does not say."""
    if pid is None:
        return None
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as handle:
                total += int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total


@dataclass
class SearchTally:
    """The searches of one kind."""

    calls: int = 0
    nodes: int = 0
    engine_cpu_seconds: float = 0.0
    wall_seconds: float = 0.0


@dataclass
class EngineMeter:
    """Searches by kind: `tree` (the DiffiMax walk, `Backend.analyse`) and each level of
    `Backend.reply_values` (`shallow`, `probe`, `deep`, `deeper`)."""

    kinds: dict[str, SearchTally] = field(default_factory=dict)

    def record(self, kind: str, nodes: int, cpu_ns: int | None, wall: float) -> None:
        tally = self.kinds.setdefault(kind, SearchTally())
        tally.calls += 1
        tally.nodes += nodes
        tally.engine_cpu_seconds += (cpu_ns or 0) / 1e9
        tally.wall_seconds += wall

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {kind: asdict(tally) for kind, tally in sorted(self.kinds.items())}
