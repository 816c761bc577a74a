"""Mining-job benchmarks, side by side in one run on the same games.

  python -m benchmarks.bench_mine [--games N] [--plies 10-19] [--depth 2]

- positions analysed per second, native and Stockfish backends (1 worker each);
- speed-up from 1 to 2 workers (native);
- engine calls saved by reusing repeated positions;
- the job's overhead outside the engine, as a share of worker time;
- warm table within a game (one unit per game) against a cold table per position.

The machine is shared and noisy: read the ratios within one run.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import chess
import ray

from pipeline.engines.backends import EngineOptions
from pipeline.ingest.games import Selected, read_games
from pipeline.ingest.headers import GameFilter
from pipeline.ingest.sources import iter_shards
from pipeline.mine.driver import MineConfig, run
from pipeline.mine.work import AnalysisUnit, Judging, analyse_unit
from search.backend import NativeBackend
from search.judges import JudgeSettings
from search.settings import DiffiMaxSettings

# The seed's analysis alone (what these figures were first measured with).
SEED_ONLY = JudgeSettings(judges=frozenset({"dip"}))

GAMES = Path(__file__).resolve().parents[2] / "shared" / "data" / "games" / "lichess_player_b_1089.pgn"


def job(workdir: Path, name: str, games: int, plies: tuple[int, int], settings: DiffiMaxSettings, workers: int,
        engine: str = "native", options: EngineOptions | None = None) -> dict[str, Any]:  # fmt: skip
    config = MineConfig(
        inputs=(str(GAMES),), out=str(workdir / name), settings=settings, judges=SEED_ONLY, engine=engine,
        engine_options=options or EngineOptions(), game_filter=GameFilter(ply_from=plies[0], ply_to=plies[1]),
        max_games=games, workers=workers, shard_bytes=64 << 10,
    )  # fmt: skip
    return run(config, echo=lambda line: None)


def describe(name: str, manifest: dict[str, Any]) -> float:
    analysed = manifest["positions_analysed"]
    wall = manifest["wall_seconds"]
    capacity = wall * manifest["workers"]
    overhead = 1 - manifest["engine_seconds"] / capacity
    print(f"   {name:<22} {manifest['positions']:>5} positions, {analysed:>5} analysed, "
          f"{manifest['positions_reused']:>4} reused | {wall:7.1f} s wall | {analysed / wall:6.2f} analysed/s | "
          f"engine {manifest['engine_seconds']:7.1f} of {capacity:7.1f} worker-s: overhead {overhead:.1%}")  # fmt: skip
    return analysed / wall


def warm_vs_cold(games: int, plies: tuple[int, int], settings: DiffiMaxSettings) -> None:
    """Nodes to analyse the same positions with the table kept within each game, or cleared
    before every position."""
    units = []
    for shard in iter_shards([str(GAMES)], shard_bytes=1 << 30):
        for outcome in read_games(shard, GameFilter(ply_from=plies[0], ply_to=plies[1])):
            if isinstance(outcome, Selected) and outcome.positions:
                plies_list = tuple(p["ply"] for p in outcome.positions)
                units.append(AnalysisUnit(outcome.game["game_id"], outcome.start_fen, outcome.moves, plies_list))
            if len(units) >= games:
                break
        break
    totals = {}
    for mode in ("warm", "cold"):
        backend = NativeBackend()
        nodes = 0
        start = time.perf_counter()
        judging = Judging(settings, SEED_ONLY, "dip")
        for unit in units:
            if mode == "warm":
                results = analyse_unit(backend, unit, judging)
            else:
                results = [r for ply in unit.plies for r in analyse_unit(backend, AnalysisUnit(
                    unit.game_id, unit.start_fen, unit.moves, (ply,)), judging)]  # fmt: skip
            nodes += sum(r.response.get("nodes", 0) for r in results)
        totals[mode] = (nodes, time.perf_counter() - start)
    (warm_nodes, warm_time), (cold_nodes, cold_time) = totals["warm"], totals["cold"]
    print(f"   warm table within a game: {warm_nodes:,} nodes {warm_time:.1f} s; cold per position: "
          f"{cold_nodes:,} nodes {cold_time:.1f} s; warm/cold nodes {warm_nodes / cold_nodes:.3f}, "
          f"time {warm_time / cold_time:.3f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=60)
    parser.add_argument("--plies", default="10-19")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--stockfish-nodes", type=int, default=50_000)
    args = parser.parse_args()
    low, high = (int(x) for x in args.plies.split("-"))
    settings = DiffiMaxSettings(depth=args.depth)
    workdir = Path(tempfile.mkdtemp(prefix="bench-mine-"))
    print(f"mining {args.games} games of {GAMES.name}, plies {low}-{high}, depth {args.depth}")
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        one = job(workdir, "native-1", args.games, (low, high), settings, 1)
        two = job(workdir, "native-2", args.games, (low, high), settings, 2)
        print("1. native engine")
        rate_one = describe("native, 1 worker", one)
        rate_two = describe("native, 2 workers", two)
        print(f"   speed-up 1 -> 2 workers: {rate_two / rate_one:.2f}x")
        print(
            f"2. reuse: {one['positions_reused']} of {one['positions']} positions were repeats "
            f"({one['positions_reused'] / max(1, one['positions']):.1%} of engine analyses saved)"
        )
        if importlib.util.find_spec("pipeline.engines.uci") and (
            shutil.which("stockfish") or Path("/usr/games/stockfish").exists()
        ):
            sf = job(workdir, "stockfish-1", args.games, (low, high), DiffiMaxSettings(depth=2), 1,
                     engine="stockfish", options=EngineOptions(nodes=args.stockfish_nodes))  # fmt: skip
            print(f"3. Stockfish backend (nodes {args.stockfish_nodes} per search)")
            describe("stockfish, 1 worker", sf)
    finally:
        ray.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)
    print("4. transposition table kept within a game vs cleared per position (native, same positions)")
    warm_vs_cold(min(args.games, 20), (low, high), settings)
    print(f"   (python-chess {chess.__version__})")


if __name__ == "__main__":
    main()
