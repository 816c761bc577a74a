"""The PGN of a puzzle collection: one game per puzzle from the Lichess FEN, our comments on the moves."""

from __future__ import annotations

from collections.abc import Sequence

import chess
import chess.pgn

from pipeline.common.sanitize import clean_text, pgn_value, safe_url
from pipeline.outputs.puzzles.records import Puzzle
from pipeline.outputs.puzzles.words import role


def site_text(site: str | None) -> str:
    """The Site tag: an http(s) URL, or plain text such as "Chess.com"; anything else with a scheme
    (`javascript:`) is dropped, so no viewer that links the tag runs it."""
    if safe_url(site):
        return safe_url(site)
    text = clean_text(site)
    return "" if ":" in text else text


def render_pgn(puzzles: Sequence[Puzzle]) -> str:
    """One game per puzzle, starting at the Lichess FEN (SetUp/FEN), with the standard it met."""
    chunks = []
    for p in puzzles:
        g = p.game
        tags = [
            ("Event", pgn_value(g.event)),
            ("Site", pgn_value(site_text(g.site))),
            ("Date", pgn_value(g.date, "????.??.??")),
            ("Round", "-"),
            ("White", pgn_value(g.white)),
            ("Black", pgn_value(g.black)),
            ("Result", "*"),
        ]
        if g.white_elo is not None:
            tags.append(("WhiteElo", str(int(g.white_elo))))
        if g.black_elo is not None:
            tags.append(("BlackElo", str(int(g.black_elo))))
        if g.eco:
            tags.append(("ECO", pgn_value(g.eco)))
        if g.opening:
            tags.append(("Opening", pgn_value(g.opening)))
        tags += [
            ("SetUp", "1"),
            ("FEN", p.fen),
            ("PuzzleId", p.puzzle_id),
            ("PuzzleKind", p.kind),
            ("PuzzleStandard", p.standard),
            ("Themes", " ".join(p.themes)),
        ]
        if p.set_rule:
            tags.append(("SetRule", p.set_rule))
        if p.rating is not None:
            tags += [("PuzzleRating", str(p.rating)), ("PuzzleRatingDeviation", str(p.rating_deviation))]
        if p.game_url:
            tags.append(("GameUrl", pgn_value(p.game_url)))
        if p.opening_tags:
            tags.append(("OpeningTags", pgn_value(p.opening_tags)))
        tags += [("Games", str(len(p.game_ids))), ("Annotator", "diffimax")]
        game = chess.pgn.Game()
        game.setup(chess.Board(p.fen))
        node: chess.pgn.GameNode = game
        for index, uci in enumerate(p.moves):
            node = node.add_variation(chess.Move.from_uci(uci))
            node.comment = role(p, index).replace("{", "(").replace("}", ")")
        exporter = chess.pgn.StringExporter(headers=False, variations=False, comments=True)
        movetext = game.accept(exporter)
        header = "\n".join(f'[{name} "{value}"]' for name, value in tags)
        chunks.append(f"{header}\n\n{movetext}\n")
    return "\n".join(chunks)
