"""Search-core benchmarks, each run side by side with its baseline in one process.

  python -m benchmarks.bench_search [--positions N] [--depth D]

1. Native engine against a plain python-chess alpha-beta (negamax, material, no table, no
   quiescence) at the same depth on the same positions: nodes/s and time per position.
2. DiffiMax nodes against plain alpha-beta nodes at equal depth (Safety Margin 0.5, scope All).
3. Alpha-beta leaves against minimax leaves under best / random / worst move order on random trees.

The machine is shared and noisy: compare ratios within one run, not seconds across runs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from itertools import islice
from pathlib import Path

import chess
import chess.pgn

from search.alphabeta import Searcher, minimax_decision
from search.chessgame import ChessGame
from search.diffimax import DiffiMaxSearch
from search.settings import DiffiMaxSettings
from search.tree import Tree, TreeGame
from search.ttable import TranspositionTable

GAMES = Path(__file__).resolve().parents[2] / "shared" / "data" / "games" / "lichess_100.pgn"
MATERIAL = {
    chess.PAWN: 100,
    chess.KNIGHT: 320,
    chess.BISHOP: 330,
    chess.ROOK: 500,
    chess.QUEEN: 900,
    chess.KING: 0,
}


def positions(count: int, seed: int = 11) -> list[chess.Board]:
    rng = random.Random(seed)
    boards: list[chess.Board] = []
    with open(GAMES, encoding="utf-8") as handle:
        while len(boards) < count:
            game = chess.pgn.read_game(handle)
            if game is None:
                break
            moves = list(game.mainline_moves())
            if len(moves) < 12:
                continue
            board = game.board()
            for move in islice(moves, rng.randrange(8, min(len(moves), 60))):
                board.push(move)
            if not board.is_game_over():
                boards.append(board)
    return boards


class PlainAlphaBeta:
    """The baseline: textbook negamax alpha-beta on python-chess with a material count."""

    def __init__(self) -> None:
        self.nodes = 0

    def evaluate(self, board: chess.Board) -> int:
        score = 0
        for piece_type, value in MATERIAL.items():
            score += value * (len(board.pieces(piece_type, board.turn)) - len(board.pieces(piece_type, not board.turn)))
        return score

    def search(self, board: chess.Board, depth: int, alpha: int = -(10**9), beta: int = 10**9) -> int:
        self.nodes += 1
        if board.is_checkmate():
            return -100_000
        if depth == 0 or board.is_game_over():
            return self.evaluate(board) if depth == 0 else 0
        for move in board.legal_moves:
            board.push(move)
            score = -self.search(board, depth - 1, -beta, -alpha)
            board.pop()
            if score >= beta:
                return score
            alpha = max(alpha, score)
        return alpha


def bench_engines(boards: list[chess.Board], depth: int) -> None:
    print(f"\n1. native engine vs plain python-chess alpha-beta, depth {depth}, {len(boards)} positions")
    native_nodes = native_time = plain_nodes = plain_time = 0.0
    for board in boards:
        game = ChessGame(board, board.turn)
        searcher = Searcher(game, tt=TranspositionTable())
        start = time.perf_counter()
        searcher.search(depth)
        native_time += time.perf_counter() - start
        native_nodes += searcher.stats.nodes + game.qnodes
        plain = PlainAlphaBeta()
        start = time.perf_counter()
        plain.search(board.copy(), depth)
        plain_time += time.perf_counter() - start
        plain_nodes += plain.nodes
    native_rate, plain_rate = native_nodes / native_time, plain_nodes / plain_time
    print(f"   native: {native_nodes:>9.0f} nodes (incl. quiescence) {native_time:7.2f} s {native_rate:9.0f} nodes/s")
    print(f"   plain : {plain_nodes:>9.0f} nodes                     {plain_time:7.2f} s {plain_rate:9.0f} nodes/s")
    print(
        f"   nodes/s ratio native/plain: {native_rate / plain_rate:.2f}x; "
        f"time per position ratio native/plain: {native_time / plain_time:.2f}x "
        f"(native also searches captures to quiescence)"
    )


def bench_overhead(boards: list[chess.Board], depth: int) -> None:
    print(f"\n2. DiffiMax vs plain alpha-beta (same engine), depth {depth}, Safety Margin 0.5, scope All")
    settings = DiffiMaxSettings(depth=depth, safety_margin=0.5, scope="all")
    ratios, times = [], []
    total_ab = total_dm = 0
    for board in boards:
        setter = not board.turn  # as in mining: the side to move is the responder
        game = ChessGame(board, setter)
        searcher = Searcher(game, tt=TranspositionTable())
        start = time.perf_counter()
        for d in range(1, depth + 1):  # iterative deepening, as DiffiMax warms up
            searcher.search(d)
        ab_time = time.perf_counter() - start
        ab_nodes = searcher.stats.nodes + game.qnodes
        game = ChessGame(board, setter)
        start = time.perf_counter()
        result = DiffiMaxSearch(game, settings, tt=TranspositionTable()).run()
        dm_time = time.perf_counter() - start
        dm_nodes = result.stats.nodes + game.qnodes
        ratios.append(dm_nodes / ab_nodes)
        times.append(dm_time / ab_time)
        total_ab += ab_nodes
        total_dm += dm_nodes
    print(
        f"   alpha-beta {total_ab} nodes, DiffiMax {total_dm} nodes: overall {total_dm / total_ab:.2f}x; "
        f"per position median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f}); "
        f"time median {statistics.median(times):.2f}x"
    )


def random_tree(rng: random.Random, depth: int, branching: int) -> Tree:
    if depth == 0:
        return rng.randint(-1000, 1000)
    return tuple(random_tree(rng, depth - 1, branching) for _ in range(branching))


def reorder(tree: Tree, maximizing: bool, mode: str, rng: random.Random) -> tuple[Tree, int]:
    """The tree with children sorted best-first, worst-first or shuffled; and its value."""
    if isinstance(tree, int):
        return tree, tree
    children = [reorder(child, not maximizing, mode, rng) for child in tree]
    if mode == "random":
        rng.shuffle(children)
    else:
        best_first = mode == "best"
        children.sort(key=lambda pair: pair[1], reverse=maximizing == best_first)
    values = [value for _, value in children]
    return tuple(child for child, _ in children), max(values) if maximizing else min(values)


def bench_ordering(trees: int, depth: int, branching: int) -> None:
    print(f"\n3. alpha-beta leaves vs minimax leaves, {trees} random trees, depth {depth}, branching {branching}")
    rng = random.Random(5)
    full = branching**depth
    optimum = branching ** ((depth + 1) // 2) + branching ** (depth // 2) - 1
    for mode in ("best", "random", "worst"):
        leaves = []
        for _ in range(trees):
            tree, value = reorder(random_tree(rng, depth, branching), True, mode, rng)
            searcher = Searcher(TreeGame(tree), ordering="natural")
            assert searcher.search(depth).value == value
            leaves.append(searcher.stats.leaves)
        mean = statistics.mean(leaves)
        print(
            f"   {mode:<6}: {mean:8.0f} leaves of {full} ({mean / full:.3f} of minimax; "
            f"theory best b^ceil(d/2)+b^floor(d/2)-1 = {optimum})"
        )
    _, _, stats = minimax_decision(TreeGame(random_tree(rng, depth, branching)), depth)
    print(f"   minimax: {stats.leaves} leaves (always all)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, default=12)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--trees", type=int, default=50)
    args = parser.parse_args()
    boards = positions(args.positions)
    bench_engines(boards, args.depth)
    bench_overhead(boards, args.depth)
    bench_ordering(args.trees, depth=6, branching=5)


if __name__ == "__main__":
    main()
