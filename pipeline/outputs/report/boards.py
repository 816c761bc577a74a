"""The report's top trap positions: each drawn as a board (inline SVG from `chess.svg`, seen from
the responder's side, the best reply and the trap candidate as arrows) beside its candidates, what
humans played and example games."""

from __future__ import annotations

import re
from typing import Any, Final

import chess
import chess.svg

from pipeline.common.sanitize import clean_text, safe_url
from pipeline.common.words import quantity
from pipeline.dataset.queries import QueryResult
from pipeline.outputs.html import Html, tag
from pipeline.outputs.report.data import Details, number, shown_positions
from pipeline.outputs.report.sections import facts, fen_link, table
from search.notation import legal_move, uci_as_san
from search.values import format_percent

# Width and height of a board, in CSS pixels.
BOARD_PIXELS: Final = 300
# Trap candidates listed beside each board.
CANDIDATES_SHOWN: Final = 5
# Arrow colours of chess.svg (its defaults: translucent green and red).
BEST_ARROW: Final = "green"
TRAP_ARROW: Final = "red"

# Element ids and references inside a chess.svg board (made unique per board).
_SVG_ID = re.compile(r'(\bid="|href="#|url\(#)')


def reply_board_svg(
    board: chess.Board,
    index: int,
    *,
    best: Any,
    trap: Any,
    last: Any,
    size: int = BOARD_PIXELS,
    prefix: str = "b",
    coordinates: bool = True,
) -> Html:
    """The position from the responder's side, the best reply as a green arrow and the trap
    candidate as a red one, the move that led here highlighted when known. The drawing's element
    ids start with `prefix` and `index`, so that every board of the page keeps its own; a small
    board goes without its coordinates (half the markup)."""
    arrows = []
    for uci, color in ((best, BEST_ARROW), (trap, TRAP_ARROW)):
        move = legal_move(board, uci)
        if move is not None:
            arrows.append(chess.svg.Arrow(move.from_square, move.to_square, color=color))
    try:
        lastmove = chess.Move.from_uci(str(last)) if last else None
    except ValueError:
        lastmove = None
    svg = chess.svg.board(
        board,
        orientation=board.turn,
        lastmove=lastmove,
        arrows=arrows,
        size=size,
        coordinates=coordinates,
        check=board.king(board.turn) if board.is_check() else None,
    )
    return Html(_SVG_ID.sub(rf"\g<1>{prefix}{index}-", svg))


def _side(color: chess.Color) -> str:
    return "White" if color == chess.WHITE else "Black"


def game_link(name: Any, link: Any) -> Html:
    """A game named by its players, event and date, linked to where it can be seen (a plain
    http(s) address only; else the name alone)."""
    url = safe_url(link if isinstance(link, str) else None)
    text = clean_text(name) or "?"
    return tag("a", text, href=url, rel="noopener noreferrer nofollow") if url else Html(tag("span", text))


def position_card(index: int, row: dict[str, Any], details: Details) -> Html:
    key = row["position_key"]
    candidates = details["candidates"].get(key, [])
    played = details["played"].get(key, [])
    last = details["last"].get(key, [])
    games = details["games"].get(key, [])
    rate = number(row["fall_rate"]) or 0.0
    few = " (too few to rank)" if row.get("few_occurrences") else ""
    heading = tag(
        "h3",
        f"#{index} ",
        tag("span", f"{quantity(row['games'], 'game')}, fell {row['fell']} ({format_percent(rate)}){few}"),
    )
    try:
        board: chess.Board | None = chess.Board(str(row["fen"]))
    except ValueError:
        board = None
    if board is None:
        return tag(
            "article", heading, tag("p", "Unreadable FEN: ", tag("code", row["fen"]), class_="note"), class_="card"
        )
    trap = candidates[0]["move"] if candidates else None
    drawing = tag(
        "figure",
        reply_board_svg(board, index, best=row["best_move_uci"], trap=trap, last=last[0]["move_uci"] if last else None),
        class_="board",
    )
    candidate_items = [
        tag(
            "li",
            tag("span", uci_as_san(board, c["move"]), class_="trap" if i == 0 else None),
            f" dip {c['dip_pawns']}, played {c['played']} of {c['occurrences']}",
        )
        for i, c in enumerate(candidates[:CANDIDATES_SHOWN])
    ]
    more = len(candidates) - CANDIDATES_SHOWN
    if more > 0:
        candidate_items.append(tag("li", f"and {more} more", class_="note"))
    humans = ", ".join(f"{p['move_played']} x{p['times']} ({p['outcome']})" for p in played)
    game_items = [
        tag(
            "li",
            game_link(g["game"], g["link"]),
            tag("br"),
            tag(
                "span",
                (f"{g['opening']}; " if g["opening"] else "")
                + f"ply {g['ply']}, played {g['move_played']} ({g['outcome']})",
                class_="meta",
            ),
        )
        for g in games
    ]
    lines = facts(
        [
            ("position", fen_link(str(row["fen"]))),  # the FEN in the link's title: the board is above
            ("to move", f"{_side(board.turn)} (the responder); {_side(not board.turn)} set the trap"),
            ("best reply", tag("span", row["best_move"], class_="best")),
            ("trap candidates", tag("ol", candidate_items, class_="plain") if candidate_items else "none recorded"),
            ("humans played", humans or "?"),
            (
                "fall rate",
                f"{format_percent(rate)} (95 % interval {format_percent(number(row['wilson_low']) or 0)} to "
                f"{format_percent(number(row['wilson_high']) or 0)})",
            ),
            ("games", tag("ul", game_items, class_="plain")),
        ]
    )
    return tag("article", heading, drawing, lines, class_="card")


def traps_section(result: QueryResult, details: Details) -> Html:
    rows = shown_positions(result)
    intro = tag(
        "p",
        "Trap positions where humans fell, the best attested first (by the 95 % lower bound of the fall rate; a "
        "position reached fewer than 3 times comes last). Each board is seen from the responder's side: the ",
        tag("span", "green arrow", class_="best"),
        " is the best reply, the ",
        tag("span", "red arrow", class_="trap"),
        " the trap candidate humans played most (else the most tempting one), the shaded squares the move that led "
        "there when known.",
    )
    if not rows:
        return tag(
            "section",
            tag("h2", "Top trap positions"),
            tag("p", "No trap nodes in this dataset.", class_="note"),
            id="trap-positions",
        )
    cards = [position_card(i, row, details) for i, row in enumerate(rows, start=1)]
    return tag(
        "section",
        tag("h2", "Top trap positions"),
        intro,
        tag("div", cards, class_="boards"),
        tag("h3", "All rows of ", tag("code", "top-trap-positions")),
        table(result),
        id="trap-positions",
    )
