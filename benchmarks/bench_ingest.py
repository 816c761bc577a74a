"""Ingest benchmark: `read_games` against python-chess, side by side in one process, on one core.

  python -m benchmarks.bench_ingest [--repeats N] [--slice GAMES]

For each input, the same games in memory are read by

1. diffimax: `read_pgn_bytes` with no filter (every game replayed, Chess960 and variants too), which
   produces the game row and, for every position, the full row (FEN, Polyglot key, UCI and SAN of
   the move played, clock, eval);
2. python-chess: `chess.pgn.read_game` on the decoded text, then every mainline move pushed on the
   game's board (no FEN, no key, no SAN: less work than 1).

Inputs: lichess_100.pgn, lichess_player_b_1089.pgn, and the first --slice games (2,000) of
lichess_player_a_37221.pgn.zst and of lichess_eval_clk_10024.pgn.zst (every move commented), read
from the shared data in place. Runs alternate (1, 2, 1, 2, ...) and the best of --repeats is kept
for each. Finally the whole path a worker takes (iter_shards, I/O, zstd, read_games) is timed on
the two uncompressed files and the 2,000-game slice written to a temporary .pgn.zst.

The machine is shared and noisy: compare ratios within one run, not seconds across runs.
"""

from __future__ import annotations

import argparse
import io
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import chess
import chess.pgn
import zstandard

from pipeline.ingest.games import GameFilter, Selected, read_games, read_pgn_bytes
from pipeline.ingest.sources import iter_shards

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


def main(args: argparse.Namespace) -> None:
    inputs = [
        ("lichess_100.pgn", first_games(GAMES / "lichess_100.pgn", None)),
        ("lichess_player_b_1089.pgn", first_games(GAMES / "lichess_player_b_1089.pgn", None)),
        (f"lichess_player_a (first {args.slice:,})", first_games(GAMES / "lichess_player_a_37221.pgn.zst", args.slice)),
        (f"lichess_eval_clk (first {args.slice:,})", first_games(GAMES / "lichess_eval_clk_10024.pgn.zst", args.slice)),
    ]
    print(f"games/s on one core, best of {args.repeats} alternating runs; positions = rows with FEN, key, SAN")
    print(f"{'input':36} {'games':>6} {'plies':>8} {'diffimax g/s':>13} {'python-chess g/s':>17} {'ratio':>6}")
    for name, data in inputs:
        games, positions = diffimax(data)
        _, moves = python_chess(data)
        best = best_of([("diffimax", diffimax), ("python-chess", python_chess)], data, args.repeats)
        ours, theirs = games / best["diffimax"], games / best["python-chess"]
        print(f"{name:36} {games:6,} {moves:8,} {ours:13,.0f} {theirs:17,.0f} {ours / theirs:5.2f}x")
        assert positions == moves, (positions, moves)  # every move of every game became a row

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


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs per input; the best counts")
    parser.add_argument("--slice", type=int, default=2000, help="games taken from each .pgn.zst file")
    return parser.parse_args()


if __name__ == "__main__":
    main(parse_args())
