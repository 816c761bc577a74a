"""`diffimax play` against Stockfish: games at 1+0 through `chess.engine`, then every move measured.

  nice -n 10 python -m benchmarks.bench_play [--games 20] [--styles trap,tutor,best] [--nodes 20000]
        [--opponent-nodes 3000] [--ref-nodes 20000] [--base 60] [--out runs/bench_play.json]
        [--max-minutes M]

Each style plays GAMES games against Stockfish 15.1 weakened by a node limit (one thread, so its
play is reproducible), one game at a time (game 1 of each style, then game 2, ...), from the same
openings (the first plies of the shared benchmark file lichess_100.pgn, each opening once with
either colour). Our engine is the real
command, `python -m pipeline.cli play`, driven through `chess.engine` at BASE+0: the clock of each
side is its wall time between `go` and `bestmove`, and a clock below zero loses on time. A move
python-chess refuses is an illegal move.

After each game (never while a clock runs) a referee measures every move our engine made, with the
same judge and model as the player but its own engine process:

- the cost: our best value against the chosen move's value (centipawns, clipped at +-1000 like
  Lichess's average centipawn loss; each from a search of that move alone at REF_NODES per line);
- the human-plausibility of the move: the human-move model's probability, in the context the tutor
  used (its rating, our clock, the time control);
- the position after the move, judged for the opponent (`Judge.position`, the practical judge):
  a practical trap for them when it has a candidate, its trap chance, and whether they fell.

The summary per style: practical-trap positions reached per game, their share of our moves, mean
trap chance, centipawns per move, the plausibility (mean, and the tutor's share at or above the ε
it had in force, read from its `info string`), time per move, illegal moves and time forfeits.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import chess
import chess.engine
import chess.pgn

from pipeline.engines.backends import open_backend
from pipeline.engines.options import EngineOptions
from pipeline.human.context import MoverContext
from pipeline.human.models import load_move_model
from pipeline.judging import Judge, JudgingKit
from pipeline.play.choice import loss_cp
from pipeline.play.trap import trap_chance
from search.backend import Backend
from search.judges import JudgeSettings
from search.settings import DiffiMaxSettings

ROOT = Path(__file__).resolve().parent.parent
STOCKFISH = "/usr/games/stockfish"
OPENINGS_FILE = ROOT.parent / "shared" / "data" / "games" / "lichess_100.pgn"
# Plies of each opening taken from the benchmark file (three moves each side).
OPENING_PLIES = 6
# A game still running after this many plies is stopped and counted a draw.
MAX_PLIES = 240
# Seconds python-chess waits for our engine to start and answer `uci`, `isready`.
START_TIMEOUT = 60.0
# The tutor's info string says the ε in force: "eps 0.0500".
EPSILON = re.compile(r"\beps (\d+(?:\.\d+)?)")


def engine_command(*flags: str) -> list[str]:
    """The command of `diffimax play` run from this checkout, with `flags`."""
    return [sys.executable, "-m", "pipeline.cli", "play", *flags]


def open_player(*flags: str) -> chess.engine.SimpleEngine:
    """Our engine as a UCI subprocess of this checkout (its imports resolve to this tree)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return chess.engine.SimpleEngine.popen_uci(engine_command(*flags), timeout=START_TIMEOUT, cwd=ROOT, env=env)


def open_opponent() -> chess.engine.SimpleEngine:
    engine = chess.engine.SimpleEngine.popen_uci(STOCKFISH)
    engine.configure({"Threads": 1, "Hash": 16})
    return engine


def openings(count: int, plies: int = OPENING_PLIES, path: Path = OPENINGS_FILE) -> list[tuple[str, ...]]:
    """The first `plies` moves of the first `count` standard games of `path` with distinct starts."""
    found: list[tuple[str, ...]] = []
    with path.open(encoding="utf-8") as handle:
        while len(found) < count:
            game = chess.pgn.read_game(handle)
            if game is None:
                break
            if "FEN" in game.headers or game.headers.get("Variant", "Standard") != "Standard":
                continue
            moves = tuple(move.uci() for move in list(game.mainline_moves())[:plies])
            if len(moves) == plies and moves not in found:
                found.append(moves)
    if len(found) < count:
        raise SystemExit(f"only {len(found)} distinct openings of {plies} plies in {path}")
    return found


@dataclass
class MoveRecord:
    """One move of our engine."""

    ply: int
    """Its index in the game's move list."""
    move: str
    seconds: float
    """Wall time from `go` to `bestmove`, as the clock counted it."""
    clock: float
    """Our clock before the move, in seconds, as sent (milliseconds)."""
    opponent_clock: float
    info: str | None
    """The engine's last `info string` (what the style chose and why)."""
    measure: dict[str, Any] = field(default_factory=dict)
    """The referee's figures, filled in after the game."""


@dataclass
class GameRecord:
    style: str
    colour: str
    """Our engine's colour."""
    opening: tuple[str, ...]
    moves: list[str] = field(default_factory=list)
    result: str = "*"
    termination: str = ""
    ours: list[MoveRecord] = field(default_factory=list)
    illegal: int = 0
    flagged: bool = False
    seconds: float = 0.0


def play_game(
    ours: chess.engine.SimpleEngine,
    opponent: chess.engine.SimpleEngine,
    style: str,
    colour: chess.Color,
    opening: Sequence[str] = (),
    *,
    base: float = 60.0,
    increment: float = 0.0,
    opponent_limit: chess.engine.Limit | None = None,
    max_plies: int = MAX_PLIES,
) -> GameRecord:
    """One game from `opening`, our engine playing `colour` at base+increment against `opponent`
    at `opponent_limit` (default 3,000 nodes a move)."""
    limit_them = opponent_limit or chess.engine.Limit(nodes=3000)
    record = GameRecord(style, "white" if colour == chess.WHITE else "black", tuple(opening))
    board = chess.Board()
    for move in opening:
        board.push_uci(move)
    clocks = {chess.WHITE: base, chess.BLACK: base}
    game = object()  # python-chess sends ucinewgame when this changes
    ours.ping()  # the engine opens its backend and model now, before any clock runs
    started = time.perf_counter()
    while not board.is_game_over(claim_draw=True) and board.ply() < max_plies:
        mover = board.turn
        if mover == colour:
            sent = {side: round(clocks[side] * 1000) / 1000 for side in clocks}
            limit = chess.engine.Limit(
                white_clock=sent[chess.WHITE], black_clock=sent[chess.BLACK], white_inc=increment, black_inc=increment
            )
            tick = time.perf_counter()
            try:
                played = ours.play(board, limit, game=game, info=chess.engine.INFO_ALL)
            except chess.engine.EngineError as error:  # python-chess refuses an illegal bestmove
                record.illegal += 1
                record.termination = f"illegal move: {error}"
                record.result = "0-1" if colour == chess.WHITE else "1-0"
                break
            spent = time.perf_counter() - tick
            clocks[mover] -= spent
            if clocks[mover] < 0 or played.move is None:
                record.flagged = clocks[mover] < 0
                record.termination = "time forfeit" if record.flagged else "no move"
                record.result = "0-1" if colour == chess.WHITE else "1-0"
                break
            clocks[mover] += increment
            record.ours.append(
                MoveRecord(
                    board.ply(), played.move.uci(), spent, sent[colour], sent[not colour], played.info.get("string")
                )
            )
            board.push(played.move)
        else:
            tick = time.perf_counter()
            reply = opponent.play(board, limit_them, game=game)
            clocks[mover] -= time.perf_counter() - tick
            assert reply.move is not None
            board.push(reply.move)
    record.seconds = time.perf_counter() - started
    record.moves = [move.uci() for move in board.move_stack]
    if not record.termination:
        outcome = board.outcome(claim_draw=True)
        if outcome is not None:
            record.result = outcome.result()
            record.termination = outcome.termination.name.lower()
        else:
            record.result, record.termination = "1/2-1/2", f"stopped at {max_plies} plies"
    return record


# -- the referee ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Referee:
    """What measures the moves: an engine process of its own, the model and the judge."""

    backend: Backend
    model: Any
    settings: DiffiMaxSettings
    judges: JudgeSettings
    tutor_rating: int = 1500
    opponent_rating: int = 1500
    base_seconds: int = 60
    increment_seconds: int = 0


def measure_game(record: GameRecord, referee: Referee) -> None:
    """Fill in `measure` of every move of ours in `record` (see the module docstring)."""
    board = chess.Board()
    moves = record.moves
    by_ply = {move.ply: move for move in record.ours}
    for ply, uci in enumerate(moves):
        mine = by_ply.get(ply)
        if mine is not None:
            mine.measure = measure_move(board, uci, mine, moves[ply + 1] if ply + 1 < len(moves) else None, referee)
        board.push_uci(uci)


def measure_move(
    board: chess.Board, move: str, mine: MoveRecord, reply: str | None, referee: Referee
) -> dict[str, Any]:
    backend, settings = referee.backend, referee.settings
    us = board.turn
    best = backend.reply_values(board, us, settings, None, "deep").best
    assert best is not None
    values = backend.reply_values(board, us, settings, sorted({best, move}), "deep").values
    top = max(values.values())
    context = MoverContext(
        rating=referee.tutor_rating,
        clock_seconds=mine.clock,
        base_seconds=referee.base_seconds,
        increment_seconds=referee.increment_seconds,
    )
    plausible = referee.model.move_probabilities(board, context).get(move, 0.0)
    found: dict[str, Any] = {
        "cost_cp": loss_cp(top, values[move]),
        "value": values[move],
        "best_value": top,
        "plausible": plausible,
        "epsilon": _epsilon(mine.info),
        "trap": False,
        "chance": 0.0,
        "fell": False,
    }
    after = board.copy()
    after.push_uci(move)
    if any(after.generate_legal_moves()):
        them = MoverContext(
            rating=referee.opponent_rating,
            clock_seconds=mine.opponent_clock,
            base_seconds=referee.base_seconds,
            increment_seconds=referee.increment_seconds,
        )
        judgement = Judge(JudgingKit(backend, referee.model, None), settings, referee.judges).position(
            after, us, context=them
        )
        candidates = judgement.verdicts.candidates.get("practical", frozenset())
        found["trap"] = bool(candidates)
        found["chance"] = trap_chance(judgement, referee.judges)[0]
        found["fell"] = reply in candidates
    return found


def _epsilon(info: str | None) -> float | None:
    match = EPSILON.search(info or "")
    return None if match is None else float(match.group(1))


# -- the summary ---------------------------------------------------------------------------------


def summarise(records: list[GameRecord]) -> dict[str, Any]:
    """The figures of one style's games."""
    moves = [move for record in records for move in record.ours]
    measured = [move.measure for move in moves if move.measure]
    with_eps = [m for m in measured if m["epsilon"] is not None]
    seconds = sorted(move.seconds for move in moves)
    games = len(records)
    results = {"win": 0, "draw": 0, "loss": 0}
    for record in records:
        ours = "1-0" if record.colour == "white" else "0-1"
        results["win" if record.result == ours else "draw" if record.result == "1/2-1/2" else "loss"] += 1
    return {
        "games": games,
        "our_moves": len(moves),
        "results": results,
        "trap_positions_per_game": sum(m["trap"] for m in measured) / games if games else 0.0,
        "trap_share": _mean([float(m["trap"]) for m in measured]),
        "mean_chance": _mean([m["chance"] for m in measured]),
        "fell": sum(m["fell"] for m in measured),
        "cp_per_move": _mean([m["cost_cp"] for m in measured]),
        "cost_max_cp": max((m["cost_cp"] for m in measured), default=0),
        "plausible_mean": _mean([m["plausible"] for m in measured]),
        "moves_with_epsilon": len(with_eps),
        "share_at_epsilon": _mean([float(m["plausible"] >= m["epsilon"]) for m in with_eps]),
        "epsilon_mean": _mean([m["epsilon"] for m in with_eps]),
        "seconds_mean": _mean(seconds),
        "seconds_median": statistics.median(seconds) if seconds else 0.0,
        "seconds_max": seconds[-1] if seconds else 0.0,
        "clock_min": min((move.clock - move.seconds for move in moves), default=0.0),
        "illegal": sum(record.illegal for record in records),
        "forfeits": sum(record.flagged for record in records),
        "plies_mean": _mean([float(len(record.moves)) for record in records]),
    }


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def table(summaries: dict[str, dict[str, Any]]) -> str:
    rows = [
        ("games (W/D/L)", lambda s: "{games} ({results[win]}/{results[draw]}/{results[loss]})".format(**s)),
        ("our moves", lambda s: f"{s['our_moves']}"),
        ("practical-trap positions per game", lambda s: f"{s['trap_positions_per_game']:.2f}"),
        ("share of our moves setting one", lambda s: f"{s['trap_share']:.1%}"),
        ("mean trap chance per move", lambda s: f"{s['mean_chance']:.4f}"),
        ("opponent fell", lambda s: f"{s['fell']}"),
        ("centipawns given up per move", lambda s: f"{s['cp_per_move']:.1f}"),
        ("largest cost (cp)", lambda s: f"{s['cost_max_cp']}"),
        ("human plausibility (mean)", lambda s: f"{s['plausible_mean']:.3f}"),
        ("moves with an ε / share ≥ ε", lambda s: f"{s['moves_with_epsilon']} / {s['share_at_epsilon']:.1%}"),
        ("mean ε in force", lambda s: f"{s['epsilon_mean']:.3f}"),
        (
            "seconds per move (mean / median / max)",
            lambda s: f"{s['seconds_mean']:.2f} / {s['seconds_median']:.2f} / {s['seconds_max']:.2f}",
        ),
        ("least clock left (s)", lambda s: f"{s['clock_min']:.1f}"),
        ("illegal moves / time forfeits", lambda s: f"{s['illegal']} / {s['forfeits']}"),
        ("plies per game", lambda s: f"{s['plies_mean']:.0f}"),
    ]
    styles = list(summaries)
    lines = ["| | " + " | ".join(styles) + " |", "|---|" + "---|" * len(styles)]
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(cell(summaries[s]) for s in styles) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=20, help="games per style (even: each opening with both colours)")
    parser.add_argument("--styles", default="trap,tutor,best")
    parser.add_argument("--nodes", type=int, default=20_000, help="our engine's nodes per line")
    parser.add_argument("--opponent-nodes", type=int, default=3_000, help="Stockfish's nodes per move")
    parser.add_argument("--ref-nodes", type=int, default=20_000, help="the referee's nodes per line")
    parser.add_argument("--base", type=float, default=60.0, help="seconds on each clock (no increment)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="runs/bench_play.json")
    parser.add_argument("--max-minutes", type=float, default=None, help="start no game after this much wall time")
    args = parser.parse_args(argv)
    styles = [s.strip() for s in args.styles.split(",") if s.strip()]
    starts = openings((args.games + 1) // 2)
    model = load_move_model("default")
    referee = Referee(
        open_backend("stockfish", EngineOptions(nodes=args.ref_nodes)),
        model,
        DiffiMaxSettings(),
        JudgeSettings(judges=frozenset({"practical"})),
        base_seconds=round(args.base),
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    records: dict[str, list[GameRecord]] = {style: [] for style in styles}
    # Round robin (game 1 of every style, then game 2, ...) so that a run cut short by --max-minutes
    # still has as many games of each style, from the same openings and colours.
    deadline = None if args.max_minutes is None else time.monotonic() + 60 * args.max_minutes
    opponent = open_opponent()
    players: dict[str, chess.engine.SimpleEngine] = {}
    try:
        for style in styles:
            players[style] = open_player("--style", style, "--nodes", str(args.nodes), "--option", f"Seed={args.seed}")
        for index in range(args.games):
            if deadline is not None and time.monotonic() > deadline:
                print(
                    f"stopped after {index} games per style: --max-minutes {args.max_minutes} reached", file=sys.stderr
                )
                break
            colour = chess.WHITE if index % 2 == 0 else chess.BLACK
            for style in styles:
                record = play_game(
                    players[style],
                    opponent,
                    style,
                    colour,
                    starts[index // 2],
                    base=args.base,
                    opponent_limit=chess.engine.Limit(nodes=args.opponent_nodes),
                )
                tick = time.perf_counter()
                measure_game(record, referee)
                records[style].append(record)
                print(
                    f"{style} game {index + 1}/{args.games} as {record.colour}: {record.result} "
                    f"({record.termination}, {len(record.moves)} plies, {record.seconds:.0f} s; "
                    f"measured in {time.perf_counter() - tick:.0f} s)",
                    file=sys.stderr,
                )
                _save(out, args, records)
    finally:
        for player in players.values():
            player.quit()
        opponent.quit()
        referee.backend.close()
    summaries = {style: summarise(games) for style, games in records.items()}
    _save(out, args, records, summaries)
    print(table(summaries))


def _save(
    out: Path, args: argparse.Namespace, records: dict[str, list[GameRecord]], summaries: dict[str, Any] | None = None
) -> None:
    document = {
        "args": vars(args),
        "summaries": summaries or {style: summarise(games) for style, games in records.items() if games},
        "games": {style: [asdict(record) for record in games] for style, games in records.items()},
    }
    out.write_text(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
