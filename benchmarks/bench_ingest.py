"""Ingest benchmark: `read_games` beside python-chess's plain reader, in one process, on one core;
and ingest's share of a mining job.

  python -m benchmarks.bench_ingest [--repeats N] [--slice GAMES]
  python -m benchmarks.bench_ingest --job-share DATASET [DATASET ...]

For each input, the same games in memory are read by

1. diffimax: `read_pgn_bytes` with no filter (every game replayed, Chess960 and variants too), which
   produces the game row and, for every position, the full row (FEN, Polyglot key, UCI and SAN of
   the move played, clock, eval);
2. python-chess + rows: `chess.pgn.read_game` with its default `GameBuilder`, then every mainline
   move pushed on the game's board with the FEN, key, UCI and SAN of each position computed (the
   row work of 1 without its checks, clocks and evals);
3. python-chess: `chess.pgn.read_game`, then every mainline move pushed on the game's board (no
   FEN, no key, no SAN: the least a reader can do).

Inputs: lichess_100.pgn, lichess_player_b_1089.pgn, and the first --slice games (2,000) of
lichess_player_a_37221.pgn.zst and of lichess_eval_clk_10024.pgn.zst (every move commented), read
from the shared data in place. Runs alternate (1, 2, 3, 1, ...) and the best of --repeats is kept
for each. Finally the whole path a worker takes (iter_shards, I/O, zstd, read_games) is timed on
the two uncompressed files and the 2,000-game slice written to a temporary .pgn.zst.

--job-share re-runs the ingest of finished mining jobs (`diffimax mine ... --out DATASET`): the
same inputs, filter, game limit and default shard sizes, through `pipeline.mine.shards.prepare_shard`
in this process (best of --repeats), and sets it beside the job's manifest: wall seconds, and
`analysis_seconds` (what the analysis actors spent on their units). Ingest's share of the job's
work is ingest CPU / (ingest CPU + analysis seconds).

The machine is shared and noisy: compare ratios within one run, not seconds across runs.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import zstandard

from pipeline.ingest.games import read_games, read_pgn_bytes
from pipeline.ingest.headers import GameFilter
from pipeline.ingest.outcomes import Selected
from pipeline.ingest.sources import iter_shards
from pipeline.mine.config import MineConfig
from pipeline.mine.shards import prepare_shard
from schemas.dataset import to_signed64
from search.chessgame import zobrist

GAMES = Path(__file__).resolve().parents[2] / "shared" / "data" / "games"
NO_FILTER = GameFilter(standard_only=False)


def first_games(path: Path, count: int | None) -> bytes:
    """The decompressed bytes of the first `count` games (all if None)."""
    if path.suffix == ".zst":
        with zstandard.ZstdDecompressor().stream_reader(path.open("rb")) as reader:
            data: bytes = reader.read()
    else:
        data = path.read_bytes()
    if count is not None:
        starts = [match.start() for match in re.finditer(rb"(?m)^\[Event ", data)]
        if count < len(starts):
            data = data[: starts[count]]
    return data


def diffimax(data: bytes) -> tuple[int, int]:
    """(games read, positions emitted)."""
    games = positions = 0
    for outcome in read_pgn_bytes(data, NO_FILTER):
        games += 1
        if isinstance(outcome, Selected):
            positions += len(outcome.positions)
    return games, positions


def python_chess_rows(data: bytes) -> tuple[int, int]:
    """(games read, positions with FEN, key, UCI and SAN)."""
    handle = io.StringIO(data.decode("utf-8", "replace"))
    games = positions = 0
    while (game := chess.pgn.read_game(handle)) is not None:
        board = game.board()
        for move in game.mainline_moves():
            board.fen(), to_signed64(zobrist(board)), board.uci(move), board.san(move)
            board.push(move)
            positions += 1
        games += 1
    return games, positions


def python_chess(data: bytes) -> tuple[int, int]:
    """(games read, moves pushed)."""
    handle = io.StringIO(data.decode("utf-8", "replace"))
    games = moves = 0
    while (game := chess.pgn.read_game(handle)) is not None:
        board = game.board()
        for move in game.mainline_moves():
            board.push(move)
            moves += 1
        games += 1
    return games, moves


def best_of(runs: list[tuple[str, Callable[[bytes], tuple[int, int]]]], data: bytes, repeats: int) -> dict[str, float]:
    best = {name: float("inf") for name, _ in runs}
    for _ in range(repeats):
        for name, run in runs:
            start = time.perf_counter()
            run(data)
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def sharded(path: str) -> tuple[int, int]:
    games = positions = 0
    for shard in iter_shards([path], shard_bytes=1 << 20, shard_games=500):
        for outcome in read_games(shard, NO_FILTER):
            games += 1
            if isinstance(outcome, Selected):
                positions += len(outcome.positions)
    return games, positions


def readers(args: argparse.Namespace) -> None:
    inputs = [
        ("lichess_100.pgn", first_games(GAMES / "lichess_100.pgn", None)),
        ("lichess_player_b_1089.pgn", first_games(GAMES / "lichess_player_b_1089.pgn", None)),
        (f"lichess_player_a (first {args.slice:,})", first_games(GAMES / "lichess_player_a_37221.pgn.zst", args.slice)),
        (f"lichess_eval_clk (first {args.slice:,})", first_games(GAMES / "lichess_eval_clk_10024.pgn.zst", args.slice)),
    ]
    runs: list[tuple[str, Callable[[bytes], tuple[int, int]]]] = [
        ("diffimax", diffimax),
        ("rows", python_chess_rows),
        ("plain", python_chess),
    ]
    print(f"games/s and positions/s on one core, best of {args.repeats} alternating runs")
    print("diffimax = read_games (rows with FEN, key, SAN, clock, eval); python-chess + rows = read_game, push,")
    print("FEN, key, SAN per position; python-chess = read_game and push only")
    print(
        f"{'input':36} {'games':>6} {'plies':>8} {'diffimax g/s':>13} {'positions/s':>12} "
        f"{'py-chess+rows g/s':>18} {'py-chess g/s':>13} {'vs +rows':>9} {'vs plain':>9}"
    )
    for name, data in inputs:
        games, positions = diffimax(data)
        _, moves = python_chess(data)
        assert positions == moves, (positions, moves)  # every move of every game became a row
        best = best_of(runs, data, args.repeats)
        ours, rows, plain = (games / best[run] for run in ("diffimax", "rows", "plain"))
        print(
            f"{name:36} {games:6,} {moves:8,} {ours:13,.0f} {positions / best['diffimax']:12,.0f} "
            f"{rows:18,.0f} {plain:13,.0f} {ours / rows:8.2f}x {ours / plain:8.2f}x"
        )

    print("\nthe worker's whole path: iter_shards + I/O + decompression + read_games")
    with tempfile.TemporaryDirectory() as scratch:
        packed = Path(scratch) / "player_a_slice.pgn.zst"
        packed.write_bytes(zstandard.ZstdCompressor().compress(inputs[2][1]))
        for path in (str(GAMES / "lichess_100.pgn"), str(GAMES / "lichess_player_b_1089.pgn"), str(packed)):
            start = time.perf_counter()
            games, positions = sharded(path)
            seconds = time.perf_counter() - start
            rates = f"{games / seconds:8,.0f} games/s {positions / seconds:9,.0f} positions/s"
            print(f"{Path(path).name:36} {games:6,} games {rates}")


def ingest_once(manifest: dict[str, Any]) -> tuple[float, float, int, int]:
    """(wall s, CPU s, games read, positions) of the job's ingest, shard by shard as the driver does it."""
    settings = dict(manifest["filter"])
    if settings.get("time_controls") is not None:
        settings["time_controls"] = frozenset(settings["time_controls"])
    game_filter = GameFilter(**settings)
    defaults = MineConfig(inputs=("-",), out="-")  # the job ran with the CLI's shard sizes
    limit = manifest["max_games"]
    games = positions = 0
    wall, cpu = time.perf_counter(), time.process_time()
    shards = iter_shards(manifest["inputs"], shard_bytes=defaults.shard_bytes, shard_games=defaults.shard_games)
    for shard in shards:
        if limit is not None and limit <= 0:
            break
        counts, _, _ = prepare_shard(shard, game_filter, limit, 1)
        if limit is not None:
            limit -= counts.games_read
        games += counts.games_read
        positions += counts.positions
    return time.perf_counter() - wall, time.process_time() - cpu, games, positions


def job_share(datasets: list[str], repeats: int) -> None:
    for dataset in datasets:
        manifest = json.loads((Path(dataset) / "manifest.json").read_text())
        runs = [ingest_once(manifest) for _ in range(repeats)]
        wall, cpu = min(run[0] for run in runs), min(run[1] for run in runs)
        _, _, games, positions = runs[0]
        if (games, positions) != (manifest["games_read"], manifest["positions"]):
            raise SystemExit(
                f"{dataset}: ingest gives {games} games, {positions} positions; the job had "
                f"{manifest['games_read']}, {manifest['positions']} (other shard sizes?)"
            )
        analysis = manifest["analysis_seconds"]
        print(
            json.dumps(
                {
                    "dataset": dataset,
                    "engine": manifest["engine"]["name"],
                    "games_read": games,
                    "positions": positions,
                    "positions_analysed": manifest["positions_analysed"],
                    "ingest_wall_s": round(wall, 4),
                    "ingest_cpu_s": round(cpu, 4),
                    "ingest_positions_per_s": round(positions / wall),
                    "job_wall_s": round(manifest["wall_seconds"], 2),
                    "analysis_s": round(analysis, 2),
                    "engine_s": round(manifest["engine_seconds"], 2),
                    "analysed_positions_per_s": round(manifest["positions_analysed"] / analysis, 2),
                    "ingest_share_of_work_pct": round(100 * cpu / (cpu + analysis), 3),
                    "ingest_vs_job_wall_pct": round(100 * wall / manifest["wall_seconds"], 3),
                }
            )
        )


def main(args: argparse.Namespace) -> None:
    if args.job_share:
        job_share(args.job_share, args.repeats)
    else:
        readers(args)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs per input; the best counts")
    parser.add_argument("--slice", type=int, default=2000, help="games taken from each .pgn.zst file")
    parser.add_argument("--job-share", nargs="+", metavar="DATASET", help="ingest's share of these mined datasets")
    return parser.parse_args()


if __name__ == "__main__":
    main(parse_args())
