"""The repertoire as PGN a coach can import: one game (a Lichess study chapter) per main line, at
most 64, each with the traps along it as variations.

A *main line* runs from the start through the recommended tree: at the player's turn the
recommended move, at the opponent's each explored reply, down to a leaf; the lines most humans
reach come first. Every move is commented with figures formatted from the nodes' rows
(`pipeline.repertoire.records`), never computed again:

- each chapter opens with one sentence in SAN on its likeliest trap: where it comes, how many
  players of the rating fall into it, what it loses and the punishment's first move;
- the player's move: its expected score against humans and what it adds over the engine's line,
  the traps it sets (each with how many players of the rating play it, what it loses in pawns or
  the mate it allows, and the punishment's first move), how often one comes, then what the
  dataset's games did (`--data`);
- the opponent's move: how many players of the rating play it (and where that came from) and the
  dataset's share;
- a trap reply off the line: a variation of the reply and its punishment (the engine's line).

Probabilities and scores are percents (`search.values.format_percent`: a score's points are
Win%'s); a trap's loss is in pawns, or "#N" for the mate it allows (`format_pawns`); moves are in
SAN with their numbers. The figures stay in the rows (`nodes.parquet`) for machines.
Comments are text python-chess writes into braces; a brace in them is replaced, so every game
parses (`tests/repertoire`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import chess
import chess.pgn

from pipeline.repertoire.settings import MAX_CHAPTERS
from search.notation import numbered_san, san_line
from search.values import format_pawns, format_percent, is_mate_score

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
    text = f" Seen in {row['observed_count']} of {row['observed_games']} games"
    if row["observed_share"] is not None:
        text += " (" + with_interval(row["observed_share"], row["share_low"], row["share_high"]) + ")"
    if row["observed_score"] is not None:
        text += ", scoring " + with_interval(row["observed_score"], row["score_low"], row["score_high"])
    return text + "."


def with_interval(value: float, low: float, high: float) -> str:
    """A share or a score with its 95 % interval: `58 % [42 %, 71 %]`."""
    return f"{format_percent(value)} [{format_percent(low)}, {format_percent(high)}]"


def loss_words(trap: Row, before: Row) -> str:
    """What a trap reply costs its player against the best reply at `before` (the node where it is
    played; both values are the repertoire player's): "loses 3.2 pawns", or "allows #2"."""
    value, best = trap["value_cp"], before["value_cp"]
    if value is None or best is None:
        return f"loses {format_percent(trap['drop'])} of the expected score"
    if is_mate_score(value) and value > 0:
        return f"allows {format_pawns(value, setter_moves_first=True)}"
    return f"loses {max(0, value - best) / 100:.1f} pawns"


def punishment_words(trap: Row) -> str:
    """` to 5.Nxe5`: the punishment's first move, with its number (nothing without one)."""
    line = trap["punishment_san"]
    return f" to {line.split()[0]}" if line else ""


def players(probability: float, rating: int) -> str:
    """`24 % of 1600 players`."""
    return f"{format_percent(probability)} of {rating} players"


def trap_words(trap: Row, before: Row, rating: int) -> str:
    """`4...Nxe5 (24 % of 1600 players, loses 3.2 pawns to 5.Qd5)`."""
    share = players(trap["probability"], rating)
    move = numbered_san(chess.Board(before["fen"]), chess.Move.from_uci(trap["move_uci"]))
    return f"{move} ({share}, {loss_words(trap, before)}{punishment_words(trap)})"


# Where a reply's probability came from, as the comments say it (`pipeline.repertoire.expand`).
SOURCE_WORDS = {
    "corpus": "from games",
    "shrunk": "from games and predicted",
    "model": "predicted",
    "none": "no evidence",
}


def source_words(source: str | None) -> str:
    return SOURCE_WORDS.get(source or "none", source or "no evidence")


def player_comment(row: Row, traps: Sequence[Row], rating: int) -> str:
    """The comment on a player's move (see the module docstring)."""
    text = (
        f"Expected score {format_percent(row['expected'])} against {rating} players "
        f"({format_percent(row['move_gain'], signed=True)} over the engine's line)."
    )
    if traps:
        named = ", ".join(trap_words(t, row, rating) for t in traps)
        text += f" Traps: {named}. One comes {format_percent(row['trap_probability'])} of the time."
    return text + observed_words(row)


def reply_comment(row: Row, before: Row, source: str | None, rating: int) -> str:
    """The comment on an opponent's move: how many players play it, and where that came from."""
    text = f"Played by {players(row['probability'], rating)} ({source_words(source)})."
    if row["trap"]:
        text += f" A trap: it {loss_words(row, before)}{punishment_words(row)}."
    return text + observed_words(row)


def trap_comment(row: Row, before: Row, source: str | None, rating: int) -> str:
    """The comment on a trap reply off the line (its punishment follows)."""
    return (
        f"Trap, played by {players(row['probability'], rating)} ({source_words(source)}): it "
        f"{loss_words(row, before)}." + observed_words(row)
    )


def share_words(probability: float, rating: int) -> str:
    """How many players of `rating` play a move, as a coach says it: "one 1200 player in three"
    where that is within 3 points of the figure, else "24 % of 1200 players"."""
    if 0.1 <= probability < 0.5:
        count = round(1 / probability)
        if abs(1 / count - probability) <= 0.03:
            words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
            return f"one {rating} player in {words.get(count, str(count))}"
    return players(probability, rating)


def chapter_sentence(
    line: Sequence[Row],
    rows_by_id: Mapping[int, Row],
    children: Mapping[int | None, list[Row]],
    start: chess.Board,
    rating: int,
) -> str:
    """The chapter's first words: its likeliest trap (the most often reached from the start), in
    SAN: "After 1.e4 e5 2.Nf3 Nc6 3.Bc4 Nd4, one 1200 player in three plays 4.Nxe5 and loses 9.0
    pawns to 4...Qg5." A line without a trap says its expected score."""
    best: tuple[float, Row, Row] | None = None
    for row in line:
        if row["mover"] != "opponent":
            continue
        before = rows_by_id[row["parent_id"]]
        for trap in (s for s in children.get(before["node_id"], []) if s["trap"]):
            weight = before["reach"] * (trap["probability"] or 0.0)
            if best is None or weight > best[0]:
                best = (weight, trap, before)
    if best is None:
        expected = format_percent(line[0]["expected"])
        return f"No trap along this line; the expected score against {rating} players is {expected}."
    _, trap, before = best
    root = start.root()
    played = [move.uci() for move in start.move_stack] + list(before["path_uci"])
    board = root.copy()
    for uci in played:
        board.push_uci(uci)
    where = f"After {san_line(root, played, numbered=True)}, " if played else "At the start, "
    move = numbered_san(board, chess.Move.from_uci(trap["move_uci"]))
    who = share_words(trap["probability"] or 0.0, rating)
    loss = loss_words(trap, before)
    if not who.startswith("one "):  # "24 % of 1200 players play ... and lose"
        loss = loss.replace("loses", "lose", 1).replace("allows", "allow", 1)
    verb = "plays" if who.startswith("one ") else "play"
    return f"{where}{who} {verb} {move} and {loss}{punishment_words(trap)}."


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
    rating = int(rows_by_id[0]["opponent_rating"])
    game.comment = clean(chapter_sentence(line, rows_by_id, children, start, rating))
    node: chess.pgn.GameNode = game
    for move in start.move_stack:
        node = node.add_variation(move)
    for row in line:
        parent = rows_by_id[row["parent_id"]]
        siblings = children.get(parent["node_id"], [])
        if row["mover"] == "player":
            traps = trap_children(row, children)
            comment = clean(player_comment(row, traps, rating))
            node = node.add_variation(chess.Move.from_uci(row["move_uci"]), comment=comment)
        else:
            for trap in [s for s in siblings if s["trap"] and s["node_id"] != row["node_id"]]:
                add_trap_variation(node, clean(trap_comment(trap, parent, parent["source"], rating)), trap)
            comment = clean(reply_comment(row, parent, parent["source"], rating))
            node = node.add_variation(chess.Move.from_uci(row["move_uci"]), comment=comment)
    return game


def trap_children(row: Row, children: Mapping[int | None, list[Row]]) -> list[Row]:
    """The traps set by a player's move: its node's trap replies, likeliest first."""
    found = [child for child in children.get(row["node_id"], []) if child["trap"]]
    return sorted(found, key=lambda child: (-(child["probability"] or 0.0), child["move_uci"]))


def add_trap_variation(node: chess.pgn.GameNode, comment: str, trap: Row) -> None:
    """A variation at `node`: the trap reply, commented, then its punishment as far as it is legal."""
    board = node.board()
    reply = chess.Move.from_uci(trap["move_uci"])
    variation = node.add_variation(reply, comment=comment)
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
