"""The one record of how an engine runs (`EngineOptions`): its set-up (threads, hash) and the
limits of its searches. The command line's flag groups build it, `open_backend` opens an engine
at it, and the UCI backend searches each line at `pipeline.engines.uci.line_limits` of it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineOptions:
    """How to run a UCI engine; None leaves the backend's documented default."""

    threads: int | None = None
    """UCI option Threads (one thread keeps results deterministic)."""
    hash_mb: int | None = None
    """UCI option Hash, in MiB."""
    nodes: int | None = None
    """Node limit per engine search (per line); the native engine's total node budget."""
    depth: int | None = None
    """Depth limit per engine search, in plies."""
    movetime: float | None = None
    """Time limit per engine search, in seconds."""
    shallow_depth: int | None = None
    """The shallow pass over every reply: plies (native) or engine depth (UCI)."""
    deeper_factor: int | None = None
    """A UCI search deeper (a class near a threshold) gets this many times the nodes and time, and
    two more plies of depth (None: `pipeline.engines.uci.DEEPER_FACTOR`)."""
    probe_divisor: int | None = None
    """A UCI probe gets the nodes divided by this (None: `pipeline.engines.uci.PROBE_DIVISOR`; 0:
    no probe, every plausible reply gets the full search)."""
