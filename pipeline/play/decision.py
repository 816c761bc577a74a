"""What one decision works with (`Decision`: the backend, the settings in force, the human
evidence), and the style best: the backend's best move, from one search at the per-line limit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import chess

from pipeline.human.corpus import Corpus
from pipeline.human.models import MoveModel
from pipeline.play.choice import Choice, MoveOption, Offer, Situation, pawns
from pipeline.play.styles import PlaySettings
from search.backend import Backend, Level, ReplyValues


@dataclass(frozen=True)
class Decision:
    """The resources and settings of one decision (the player holds its lock throughout: the
    backend is not thread-safe)."""

    backend: Backend
    settings: PlaySettings
    """The settings in force for this decision (`go depth` applied to the native engine's depth)."""
    model: MoveModel | None = None
    """The human-move model (None: the styles decide without it)."""
    corpus: Corpus | None = None
    """What humans played where (None: no corpus)."""

    def values(self, board: chess.Board, moves: Sequence[str] | None, level: Level) -> ReplyValues:
        """The values of our moves at `board` (the side to move is the setter), of `moves` only
        when given, at the shallow or the full depth."""
        return self.backend.reply_values(board, board.turn, self.settings.diffimax, moves, level)


def choose_best(decision: Decision, board: chess.Board, legal: list[str], situation: Situation, offer: Offer) -> Choice:
    """The style best: the backend's best among `legal` (the best by value when the backend's own
    best is not among them)."""
    if situation.searchmoves is None:
        found = decision.values(board, None, "deep")
    else:
        found = decision.values(board, legal, "deep")
    values = {m: v for m, v in found.values.items() if m in legal}
    move = found.best if found.best in values else min(values, key=lambda m: (-values[m], m))
    assert move is not None
    choice = Choice(
        move,
        "best",
        f"style best: {move}, the engine's best ({pawns(values[move])})",
        values[move],
        move,
        values[move],
        (MoveOption(move, values[move]),),
        complete=True,
        nodes=found.nodes,
    )
    offer(choice)
    return choice
