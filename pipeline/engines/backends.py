"""Choosing a backend from the command line's `--engine` value."""

from __future__ import annotations

from dataclasses import dataclass

from search.backend import Backend, NativeBackend


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


def open_backend(engine: str, options: EngineOptions | None = None, *, exact_root: bool = False) -> Backend:
    """`native` for the embedded engine, else a UCI engine: `stockfish` (PATH or /usr/games) or a path."""
    options = options or EngineOptions()
    if engine == "native":
        return NativeBackend(node_budget=options.nodes, exact_root=exact_root)
    from pipeline.engines.uci import open_uci_backend  # a UCI engine needs a process; import on demand

    kwargs: dict[str, object] = {
        name: value
        for name, value in (
            ("threads", options.threads),
            ("hash_mb", options.hash_mb),
            ("nodes", options.nodes),
            ("depth", options.depth),
            ("movetime", options.movetime),
        )
        if value is not None
    }
    backend: Backend = open_uci_backend(engine, exact_root=exact_root, **kwargs)  # type: ignore[arg-type]
    return backend
