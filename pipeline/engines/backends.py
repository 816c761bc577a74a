"""Choosing a backend from the command line's `--engine` value."""

from __future__ import annotations

from typing import Any

from pipeline.engines.options import EngineOptions
from search.backend import NATIVE_SHALLOW_PLIES, Backend, MaterialBackend, NativeBackend


def default_engine() -> str:
    """Stockfish where it is installed (its values hold up; the native engine's depth-3 search
    misses most of the tactics traps are made of), else the embedded native engine."""
    from pipeline.engines.process import EngineError, resolve_engine

    try:
        resolve_engine("stockfish")
    except EngineError:
        return "native"
    return "stockfish"


def open_backend(engine: str, options: EngineOptions | None = None, *, exact_root: bool = False) -> Backend:
    """`native` for the embedded engine, else a UCI engine: `stockfish` (PATH or /usr/games) or a path."""
    options = options or EngineOptions()
    if engine == "native":
        shallow = NATIVE_SHALLOW_PLIES if options.shallow_depth is None else options.shallow_depth
        return NativeBackend(node_budget=options.nodes, exact_root=exact_root, shallow_plies=shallow)
    if engine == "material":
        return MaterialBackend()
    from pipeline.engines.uci import open_uci_backend  # a UCI engine needs a process; import on demand

    kwargs: dict[str, object] = {
        name: value
        for name, value in (
            ("threads", options.threads),
            ("hash_mb", options.hash_mb),
            ("nodes", options.nodes),
            ("depth", options.depth),
            ("movetime", options.movetime),
            ("shallow_depth", options.shallow_depth),
            ("deeper_factor", options.deeper_factor),
            ("probe_divisor", options.probe_divisor),
        )
        if value is not None
    }
    backend: Backend = open_uci_backend(engine, exact_root=exact_root, **kwargs)  # type: ignore[arg-type]
    return backend


# Backends that need no engine process: the native search and the material count.
EMBEDDED = frozenset({"native", "material"})


def effective_engine_options(engine: str, options: EngineOptions) -> dict[str, Any]:
    """The engine and limits a backend would really run with (defaults filled in): the part of a
    mining job's identity that names its engine. `path` is "native" or the resolved executable."""
    if engine == "material":
        return {
            "path": "material",
            "threads": None,
            "hash_mb": None,
            "nodes": None,
            "engine_depth": None,
            "movetime": None,
            "shallow_depth": None,
        }
    if engine == "native":
        shallow = NATIVE_SHALLOW_PLIES if options.shallow_depth is None else options.shallow_depth
        return {
            "path": "native",
            "threads": None,
            "hash_mb": None,
            "nodes": options.nodes,
            "engine_depth": None,
            "movetime": None,
            "shallow_depth": shallow,
        }
    from pipeline.engines import uci
    from pipeline.engines.process import resolve_engine

    no_limit = options.nodes is None and options.depth is None and options.movetime is None
    return {
        "path": resolve_engine(engine),
        "threads": uci.DEFAULT_THREADS if options.threads is None else options.threads,
        "hash_mb": uci.DEFAULT_HASH_MB if options.hash_mb is None else options.hash_mb,
        "nodes": uci.DEFAULT_NODES if no_limit else options.nodes,
        "engine_depth": options.depth,
        "movetime": options.movetime,
        "shallow_depth": uci.DEFAULT_SHALLOW_DEPTH if options.shallow_depth is None else options.shallow_depth,
    }


# Seconds a UCI engine gets to answer `uci` when a job checks it: engines answer in well under a
# second (Stockfish loads its network first), so this only bounds the wait for a program that
# is not an engine (`/bin/cat` echoes `uci` and never says `uciok`).
CHECK_TIMEOUT = 15.0


def check_backend(engine: str) -> str:
    """Make sure `--engine` can run here before a job starts anything: the engine's name and
    version ("native", "Stockfish 15.1"), or `EngineError` with one line."""
    if engine in EMBEDDED:
        return engine
    from pipeline.engines.process import check_engine

    return check_engine(engine, timeout=CHECK_TIMEOUT)


def _limit_words(limits: Any) -> str:
    """`100,000 nodes`, `depth 12`, `0.5 s` (whichever limits are set), or ``."""
    if not isinstance(limits, dict):
        return ""
    parts = [
        f"{limits['nodes']:,} nodes" if limits.get("nodes") else None,
        f"depth {limits['depth']}" if limits.get("depth") else None,
        f"{limits['movetime']:g} s" if limits.get("movetime") else None,
    ]
    return ", ".join(part for part in parts if part)


def describe_engine(described: dict[str, Any]) -> str:
    """A backend's own description (`Backend.describe`, as the manifest keeps it) in words:
    "Stockfish 15.1, 100,000 nodes per line (4x deeper near a threshold); the shallow pass at depth 6;
    1 thread, 16 MiB hash" or "native (embedded alpha-beta on PeSTO), 2,000,000 nodes in all"."""
    version = str(described.get("version") or "")
    if version == "diffimax-native":
        budget = described.get("node_budget")
        shallow = described.get("shallow_plies")
        return (
            "native (the embedded alpha-beta on PeSTO)"
            + (f", {budget:,} nodes in all" if budget else "")
            + (f"; the shallow pass at {shallow} plies" if shallow else "")
        )
    if version == "diffimax-material":
        return "material (counts material only: a test engine)"
    name = str(described.get("engine") or described.get("name") or "unknown engine")
    words = [name]
    limits = described.get("limits") or {}
    limit = _limit_words(limits)
    if limit:
        deeper = limits.get("deeper_factor") if isinstance(limits, dict) else None
        words.append(f", {limit} per line" + (f" ({deeper:g}x deeper near a threshold)" if deeper else ""))
    shallow = _limit_words(described.get("shallow"))
    if shallow:
        words.append(f"; the shallow pass at {shallow}")
    options = described.get("options") or {}
    if isinstance(options, dict) and options:
        threads, hash_mb = options.get("Threads"), options.get("Hash")
        setup = [
            f"{threads} thread{'s' if threads != 1 else ''}" if threads else None,
            f"{hash_mb} MiB hash" if hash_mb else None,
        ]
        words.append("; " + ", ".join(part for part in setup if part))
    return "".join(words)
