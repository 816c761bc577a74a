"""The repertoire as PGN a coach can import: one game (a Lichess study chapter) per main line, at
most 64, each with the traps along it as variations.

A *main line* runs from the start through the recommended tree: at the player's turn the
recommended move, at the opponent's each explored reply, down to a leaf; the lines most humans
reach come first. Every move is commented with figures formatted from the nodes' rows
(`pipeline.repertoire.records`), never computed again:

- the player's move: `gain` (what it adds over the minimax line), `expected` (the expected score
  against humans), the traps it sets with their probability and drop (the score the opponent gives
  up), and how often one works
  (`works`: the traps' total probability), then what the dataset's games did (`--data`);
- the opponent's move: its probability `p` (and where it came from) and the dataset's share;
- a trap reply off the line: a variation of the reply and its punishment (the engine's line).

Scores, their differences and probabilities are all percents (`search.values.format_percent`): a
score's points are Win%'s, the one scale every output gives a loss of win chances on.
Comments are text python-chess writes into braces; a brace in them is replaced, so every game
parses (`tests/repertoire`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import chess
import chess.pgn

from pipeline.repertoire.settings import MAX_CHAPTERS
from search.values import format_percent

Row = Mapping[str, Any]


def children_of(rows: Sequence[Row]) -> dict[int | None, list[Row]]:
    """Each node's children, in node order."""
    found: dict[int | None, list[Row]] = {}
    for row in rows:
        found.setdefault(row["parent_id"], []).append(row)
    return found


def recommended_children(row: Row, children: Mapping[int | None, list[Row]]) -> list[Row]:
    """The children of `row` in the recommended tree: the recommended move at the player's turn,
    the explored replies (most likely first) at the opponent's."""
    below = children.get(row["node_id"], [])
    if row["to_move"] == "player":
        return [child for child in below if child["recommended"]]
    explored = [child for child in below if child["explored"]]
    return sorted(explored, key=lambda child: (-(child["probability"] or 0.0), child["move_uci"]))


def main_lines(rows: Sequence[Row], limit: int = MAX_CHAPTERS) -> tuple[list[list[Row]], int]:
    """The main lines (each a list of rows from the start's child to a leaf), most reached first,
    at most `limit`; and how many there were in all."""
    children = children_of(rows)
    root = children[None][0]
    lines: list[list[Row]] = []
    stack: list[list[Row]] = [[root]]
    while stack:
        path = stack.pop()
        below = recommended_children(path[-1], children)
        if not below:
            if len(path) > 1:
                lines.append(path[1:])
            continue
        stack.extend([*path, child] for child in reversed(below))
    lines.sort(key=lambda line: (-line[-1]["reach"], line[-1]["line_san"]))
    return lines[:limit], len(lines)


def observed_words(row: Row) -> str:
    """What the dataset's games did with the move, or nothing without `--data`."""
    if row.get("observed_games") is None:
        return ""
    text = f"; seen {row['observed_count']}/{row['observed_games']}"
    if row["observed_share"] is not None:
        text += " " + with_interval(row["observed_share"], row["share_low"], row["share_high"])
    if row["observed_score"] is not None:
        text += ", score " + with_interval(row["observed_score"], row["score_low"], row["score_high"])
    return text


def with_interval(value: float, low: float, high: float) -> str:
    """A share or a score with its 95 % interval: `58 % [42 %, 71 %]`."""
    return f"{format_percent(value)} [{format_percent(low)}, {format_percent(high)}]"


def player_comment(row: Row, traps: Sequence[Row]) -> str:
    """The comment on a player's move (see the module docstring)."""
    text = f"gain {format_percent(row['move_gain'], signed=True)}; expected {format_percent(row['expected'])}"
    if traps:
        named = ", ".join(
            f"{t['move_san']} p {format_percent(t['probability'])} drop {format_percent(t['drop'])}" for t in traps
        )
        text += f"; traps {named}; works {format_percent(row['trap_probability'])}"
    return text + observed_words(row)


def reply_comment(row: Row, source: str | None) -> str:
    """The comment on an opponent's move: its probability and where it came from."""
    text = f"p {format_percent(row['probability'])} ({source or 'none'})"
    if row["trap"]:
        text += f"; trap, drop {format_percent(row['drop'])}"
    return text + observed_words(row)


def trap_comment(row: Row, source: str | None) -> str:
    """The comment on a trap reply off the line (its punishment follows)."""
    return (
        f"trap: p {format_percent(row['probability'])} ({source or 'none'}), drop {format_percent(row['drop'])}"
        + observed_words(row)
    )


def clean(text: str) -> str:
    """A comment's text as PGN allows it inside braces."""
    return text.replace("{", "(").replace("}", ")")


def chapter(
    line: Sequence[Row],
    rows_by_id: Mapping[int, Row],
    children: Mapping[int | None, list[Row]],
    headers: Mapping[str, str],
    start: chess.Board,
) -> chess.pgn.Game:
    """One chapter: the start's moves, then the line with its comments, and at each of the
    opponent's turns along it the trap replies off the line, each with its punishment."""
    game = chess.pgn.Game()
    root = start.root()
    if root.fen() != chess.STARTING_FEN:
        game.setup(root)
    for name, value in headers.items():
        game.headers[name] = value
    node: chess.pgn.GameNode = game
    for move in start.move_stack:
        node = node.add_variation(move)
    for row in line:
        parent = rows_by_id[row["parent_id"]]
        siblings = children.get(parent["node_id"], [])
        if row["mover"] == "player":
            traps = trap_children(row, children)
            node = node.add_variation(chess.Move.from_uci(row["move_uci"]), comment=clean(player_comment(row, traps)))
        else:
            for trap in [s for s in siblings if s["trap"] and s["node_id"] != row["node_id"]]:
                add_trap_variation(node, trap, parent["source"])
            node = node.add_variation(
                chess.Move.from_uci(row["move_uci"]), comment=clean(reply_comment(row, parent["source"]))
            )
    return game


def trap_children(row: Row, children: Mapping[int | None, list[Row]]) -> list[Row]:
    """The traps set by a player's move: its node's trap replies, likeliest first."""
    found = [child for child in children.get(row["node_id"], []) if child["trap"]]
    return sorted(found, key=lambda child: (-(child["probability"] or 0.0), child["move_uci"]))


def add_trap_variation(node: chess.pgn.GameNode, trap: Row, source: str | None) -> None:
    """A variation at `node`: the trap reply, commented, then its punishment as far as it is legal."""
    board = node.board()
    reply = chess.Move.from_uci(trap["move_uci"])
    variation = node.add_variation(reply, comment=clean(trap_comment(trap, source)))
    board.push(reply)
    for uci in trap["punishment_uci"] or ():
        move = chess.Move.from_uci(uci)
        if move not in board.legal_moves:
            break
        variation = variation.add_variation(move)
        board.push(move)


def render_repertoire_pgn(rows: Sequence[Row], start: chess.Board) -> str:
    """The repertoire's chapters as one PGN text (see the module docstring). `start` is the start
    position with its move stack."""
    rows_by_id = {row["node_id"]: row for row in rows}
    children = children_of(rows)
    lines, total = main_lines(rows)
    root = rows_by_id[0]
    player = "White" if root["color"] == "white" else "Black"
    opponents = f"Opponents rated {root['opponent_rating']}"
    chunks = []
    for number, line in enumerate(lines, start=1):
        headers = {
            "Event": f"diffimax repertoire: {player} against {root['opponent_rating']}",
            "Site": "?",
            "Date": "????.??.??",
            "Round": str(number),
            "White": "Repertoire" if player == "White" else opponents,
            "Black": opponents if player == "White" else "Repertoire",
            "Result": "*",
            "Annotator": "diffimax",
            "ChapterName": clean(line[-1]["line_san"])[:120],
            "Repertoire": root["repertoire"],
            "Lines": f"{number} of {len(lines)} shown ({total} in the tree)",
        }
        game = chapter(line, rows_by_id, children, headers, start)
        chunks.append(game.accept(chess.pgn.StringExporter(headers=True, variations=True, comments=True)))
    return "\n\n".join(chunks) + "\n"
