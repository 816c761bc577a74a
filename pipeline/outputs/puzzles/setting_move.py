"""The practical rule for a set puzzle's setting move: not the *only* good move, but the move that
gives a human opponent the most chances to go wrong, among the moves that give nothing away.

A move's *practical trap chance* is the human-move model's probability (at the opponent's rating)
that the opponent's reply is one of the practical judge's trap candidates after it: replies people
play that lose at least `practical_drop` win chances (`search.judges`, the judge the dataset's
puzzles come from; its evidence is gathered by `pipeline.judging.Judge.position`, the one judging
code of `mine`, `explain` and `evaluate`). The setting move passes when

- it is *safe*: it gives up at most SAFETY_CP (the mining default safety margin, 0.5 pawns)
  against the engine's best move, and
- its trap chance is at least PRACTICAL_FLOOR, and
- it beats every other safe move's trap chance by at least PRACTICAL_GAP.

So a quiet move can be the answer: the solver is asked to find "the safe move that sets the
likeliest trap", and the book says so (and shows the chance) after the move is found.
"""

from __future__ import annotations

from collections.abc import Mapping

import chess

from pipeline.outputs.puzzles.records import PracticalCheck

PRACTICAL_FLOOR = 0.20  # the setting move's trap chance must be at least this (the practical judge's own P)
PRACTICAL_GAP = 0.10  # ... and beat the next safe move's by this (a clear best, not a coin toss)
SAFETY_CP = 50  # what a setting move may give up against the engine's best (mining's safety margin)
SETTING_BAND_CP = 25  # the verifier writes a setting move only within SAFETY_CP - this (`rules.setting_band_cp`)
SETTING_NODES = 100_000  # engine nodes per line for the setting judge (the mining default)
NEAR_SHALLOW_CP = 150  # setter moves this close to the shallow pass's best are valued deeply


def practical_verdict(setting: str, chances: Mapping[str, float], losses: Mapping[str, int]) -> PracticalCheck | None:
    """The rule on gathered evidence: `chances` per safe candidate move, `losses` (centipawns
    given up against the best) per valued move. None when `setting` is not the clear practical best."""
    loss = losses.get(setting)
    if loss is None or loss > SAFETY_CP or setting not in chances:
        return None
    chance = chances[setting]
    others = [
        (p, move) for move, p in chances.items() if move != setting and losses.get(move, SAFETY_CP + 1) <= SAFETY_CP
    ]
    runner_up, runner_move = max(others, default=(0.0, None))
    if chance < PRACTICAL_FLOOR or chance - runner_up < PRACTICAL_GAP:
        return None
    return PracticalCheck(round(chance, 4), round(runner_up, 4), runner_move, max(0, loss))


class SettingJudge:
    """Gathers a setting move's evidence with its own engine backend and the human-move model
    (both started here, ended by `close`), and applies `practical_verdict`."""

    def __init__(self, engine: str, *, model: str = "default", nodes: int = SETTING_NODES) -> None:
        from pipeline.engines.options import EngineOptions
        from pipeline.judging import HumanEvidence, Judge, open_kit
        from search.judges import JudgeSettings
        from search.settings import DiffiMaxSettings, default_depth

        self.kit = open_kit(engine, EngineOptions(nodes=nodes), HumanEvidence(model))
        assert self.kit.backend is not None  # an engine that cannot start raised
        self.backend, self.model = self.kit.backend, self.kit.model
        self.settings = DiffiMaxSettings(depth=default_depth(engine))
        self.judges = JudgeSettings(judges=frozenset({"practical"}))
        self.judge = Judge(self.kit, self.settings, self.judges)

    def losses(self, board: chess.Board, setting: str) -> dict[str, int]:
        """Centipawns each candidate move of the setter gives up against the best of them: every
        move within NEAR_SHALLOW_CP of the shallow pass's best, and `setting`, valued deeply."""
        responder = not board.turn  # values come from the other side's view: lower is better here
        shallow = self.backend.reply_values(board, responder, self.settings, None, "shallow")
        floor = min(shallow.values.values())
        near = sorted({move for move, value in shallow.values.items() if value - floor <= NEAR_SHALLOW_CP} | {setting})
        deep = self.backend.reply_values(board, responder, self.settings, near, "deep")
        best = min(deep.values.values())
        return {move: int(value - best) for move, value in deep.values.items()}

    def chance(self, board: chess.Board, move: str, rating: int | None) -> float:
        """The practical trap chance of `move` (see the module docstring)."""
        from pipeline.human.context import MoverContext

        after = board.copy()
        after.push_uci(move)
        if after.is_game_over():
            return 0.0
        judged = self.judge.position(after, board.turn, context=MoverContext(rating=rating))
        named = judged.candidates("practical") or frozenset()
        return sum(reply.model_p or 0.0 for reply in judged.evidence.replies if reply.move in named)

    def __call__(self, board: chess.Board, move: chess.Move, rating: int | None) -> PracticalCheck | None:
        self.backend.new_unit()
        setting = move.uci()
        losses = self.losses(board, setting)
        chances = {m: self.chance(board, m, rating) for m, loss in sorted(losses.items()) if loss <= SAFETY_CP}
        return practical_verdict(setting, chances, losses)

    def close(self) -> None:
        self.kit.close()
