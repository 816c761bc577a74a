"""The HTML puzzle book: one offline file in which a reader solves each puzzle on its board.

One board per puzzle, an inline SVG whose squares, coordinates and pieces are `<use>`s of shapes
defined once for the whole book (python-chess's piece drawings, `chess.svg.PIECES`), so a puzzle
costs a few kilobytes. The board shows the puzzle's position without JavaScript; the play code is
our own (`book.js`, no chess library: the generator computes every position, legal move and
accepted answer and puts them in the section's data block) and redraws that one board for every
move, every step of the step-through and every fragment `#<id>/<step>`. A Content-Security-Policy
allows no network access and no script but the book's own (by hash).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chess
import chess.svg

from pipeline.common.sanitize import clean_text
from pipeline.common.words import quantity
from pipeline.outputs.html import BOARD_SCRIPT, Html, document, join, tag
from pipeline.outputs.puzzles.records import Puzzle
from pipeline.outputs.puzzles.rules import mates_in_one
from pipeline.outputs.puzzles.standards import DEFAULT_MARGIN, DEFAULT_NODES, LICHESS_MARGIN
from pipeline.outputs.puzzles.words import colour_names, role, task
from search.values import format_win_loss

BOARD_PX = 360  # size of a board in the HTML book
HERE = Path(__file__).resolve().parent
SCRIPT = BOARD_SCRIPT + (HERE / "book.js").read_text(encoding="utf-8")
STYLE = (HERE / "book.css").read_text(encoding="utf-8").replace("BOARDPX", str(BOARD_PX))
PIECE_NAMES = {
    chess.PAWN: "pawn",
    chess.KNIGHT: "knight",
    chess.BISHOP: "bishop",
    chess.ROOK: "rook",
    chess.QUEEN: "queen",
    chess.KING: "king",
}
LIGHT, DARK, LAST = "#f0d9b5", "#b58863", "#cdd26a"  # python-chess's board colours; the last move's squares
STANDARD_WORDS = {
    "default": f"diffimax's standard: every solver move is the engine's best by {format_win_loss(DEFAULT_MARGIN)} "
    f"win chance (Lichess's blunder margin) at {DEFAULT_NODES:,} nodes, and the line ends in mate or two pawns "
    "ahead (a defensive puzzle: from two pawns down to level); a set puzzle's first move may instead be the safe "
    "move that sets the likeliest trap",
    "lichess": f"lichess-puzzler's standard: every solver move is the engine's best by "
    f"{format_win_loss(LICHESS_MARGIN)} win chance and keeps two pawns, at most one puzzle per game",
}


def shared_defs() -> Html:
    """The shapes every board uses, once per book: the squares, the coordinates in both
    orientations and the twelve pieces (each scaled to one square)."""
    dark = "".join(f"M{x} {y}h1v1h-1z" for y in range(8) for x in range(8) if (x + y) % 2 == 1)
    squares = f'<g id="sq"><rect width="8" height="8" fill="{LIGHT}"/><path d="{dark}" fill="{DARK}"/></g>'
    coords = []
    for name, white in (("cw", True), ("cb", False)):
        files = "abcdefgh" if white else "hgfedcba"
        ranks = "87654321" if white else "12345678"
        marks = [f'<text x="{i + 0.96}" y="7.95" text-anchor="end">{f}</text>' for i, f in enumerate(files)]
        marks += [f'<text x=".04" y="{i + 0.22}">{r}</text>' for i, r in enumerate(ranks)]
        coords.append(f'<g id="{name}" class="coords">{"".join(marks)}</g>')
    pieces = [
        f'<g id="{"w" if symbol.isupper() else "b"}{symbol.upper()}" transform="scale(.02222)">{drawing}</g>'
        for symbol, drawing in chess.svg.PIECES.items()
    ]
    return Html(
        '<svg class="defs" width="0" height="0" aria-hidden="true"><defs>'
        + squares
        + "".join(coords)
        + "".join(pieces)
        + "</defs></svg>"
    )


def board_svg(board: chess.Board, last: chess.Move | None, white_below: bool, label: str) -> Html:
    """One board: the shared squares and coordinates, the last move's squares, the pieces."""

    def place(square: int) -> tuple[int, int]:
        file, rank = chess.square_file(square), chess.square_rank(square)
        return (file, 7 - rank) if white_below else (7 - file, rank)

    marks = []
    if last is not None:
        for square in (last.from_square, last.to_square):
            x, y = place(square)
            marks.append(f'<rect x="{x}" y="{y}" width="1" height="1"/>')
    pieces = []
    for square, piece in board.piece_map().items():
        x, y = place(square)
        pieces.append(f'<use href="#{"w" if piece.color else "b"}{piece.symbol().upper()}" x="{x}" y="{y}"/>')
    return Html(
        f'<svg class="board" viewBox="0 0 8 8" role="img" aria-label="{html.escape(label)}">'
        f'<use href="#sq"/><g class="last" fill="{LAST}">{"".join(marks)}</g>'
        f'<use href="#{"cw" if white_below else "cb"}"/><g class="pieces">{"".join(pieces)}</g></svg>'
    )


def play_data(p: Puzzle) -> dict[str, Any]:
    """What `book.js` needs to let a reader solve `p`: the board at each step (the placement part
    of its FEN), per solver move its legal moves (`uci san` pairs), the moves accepted (the
    solution, and any mate in one where the solution's last move mates under the lichess standard:
    Lichess accepts every mate), a hint and the prompt; the caption of every step."""
    board = chess.Board(p.fen)
    solver = not board.turn
    steps: dict[str, Any] = {}
    sans: list[str] = []
    boards = [board.board_fen()]
    _, solver_name = colour_names(p)
    for index, uci in enumerate(p.moves):
        move = chess.Move.from_uci(uci)
        if index % 2 == 1:
            legal = " ".join(f"{m.uci()} {board.san(m)}" for m in board.legal_moves)
            accept = [uci]
            if index == len(p.moves) - 1 and p.standard == "lichess" and _mates(board, move):
                accept += sorted(m.uci() for m in mates_in_one(board) if m != move)
            piece = board.piece_at(move.from_square)
            kind = PIECE_NAMES[piece.piece_type] if piece else "piece"
            prompt = f"{solver_name} to move: {task(p)}." if index == 1 else f"{sans[-1]}. Your move."
            steps[str(index)] = {
                "legal": legal,
                "accept": accept,
                "prompt": prompt,
                "hint": f"move the {kind} on {chess.square_name(move.from_square)}.",
            }
        prefix = f"{board.fullmove_number}." if board.turn == chess.WHITE else f"{board.fullmove_number}..."
        sans.append(prefix + board.san(move))
        board.push(move)
        boards.append(board.board_fen())
    return {
        "orientation": "white" if solver == chess.WHITE else "black",
        "moves": list(p.moves),
        "steps": steps,
        "boards": boards,
        "captions": _captions(p, sans),
        "line": " ".join(sans[1:]),
    }


def _captions(p: Puzzle, sans: Sequence[str]) -> list[str]:
    """What each step of the step-through says (step 0: the start; step k: after move k - 1)."""
    opponent, solver = colour_names(p)
    captions = [f"{opponent} to move.", f"{opponent} played {sans[0]}. {solver} to move: {task(p)}."]
    captions += [f"{sans[k - 1]} — {role(p, k - 1)}" for k in range(2, len(sans) + 1)]
    return captions


def _mates(board: chess.Board, move: chess.Move) -> bool:
    board.push(move)
    mate = board.is_checkmate()
    board.pop()
    return mate


def render_html(puzzles: Sequence[Puzzle], *, title: str = "diffimax puzzles") -> str:
    """The puzzle book (see the module docstring)."""
    script_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode("ascii")
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{script_hash}'; base-uri 'none'; form-action 'none'"
    )
    heading = clean_text(title)
    standards = sorted({p.standard for p in puzzles})
    about = tag(
        "p",
        f"{quantity(len(puzzles), 'puzzle')}. Play the solution on the board: click a piece "
        "and its square, drag it, or type the move (Nf3 or g1f3) and press Enter; arrow keys move between "
        "squares. A wrong move is refused; Hint names the piece; Solution shows the line; the step buttons "
        "below a board replay it. ",
        *(f"Standard met: {STANDARD_WORDS.get(name, name)}. " for name in standards),
        "In a set puzzle marked practical, the move to find is the one that gives the opponent the best chance "
        'to go wrong while giving up at most half a pawn; the trap it sets follows. "The trap" is a move the '
        "practical judge names as one people fall for; otherwise the opponent's move is called a mistake.",
        class_="about",
    )
    sections = (_puzzle_html(n, p) for n, p in enumerate(puzzles, start=1))
    body = join([shared_defs(), tag("h1", heading), about, *sections], Html("\n"))
    return document(
        heading,
        [Html("\n"), body, Html("\n"), tag("script", Html(SCRIPT)), Html("\n")],
        csp=csp,
        style=Html(STYLE),
        meta=[tag("meta", name="referrer", content="no-referrer")],
    )


def _meta(p: Puzzle) -> Html:
    g = p.game
    meta: list[Html | str] = [f"{clean_text(g.white) or '?'} vs {clean_text(g.black) or '?'}"]
    # PGN's "unknown" ("?", "????.??.??") says nothing to a reader: left out, as the views' game_name does.
    meta += [clean_text(value) for value in (g.event, g.date, g.opening) if value and value.strip("?.")]
    if p.game_url:
        meta.append(tag("a", "game", href=p.game_url, rel="noopener noreferrer nofollow"))
    meta.append(f"found in {quantity(len(p.game_ids), 'game')}")
    if p.rating is not None:
        meta.append(f"rating {p.rating} ± {p.rating_deviation}")
    meta.append(f"standard: {p.standard}" + (f", {p.set_rule} setting move" if p.set_rule else ""))
    return tag("p", join(meta, " · "), class_="meta")


def _data_block(data: dict[str, Any]) -> Html:
    """The play data as JSON text in a hidden element (only `& < >` escaped: a fraction of the
    size of an attribute, where every quote would be escaped). Our own text only: moves, SAN and
    the generator's words, never a header."""
    text = json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return Html(f'<div class="play-data" hidden>{html.escape(text, quote=False)}</div>')


def _puzzle_html(number: int, p: Puzzle) -> Html:
    opponent, solver = colour_names(p)
    data = play_data(p)
    board = chess.Board(p.fen)
    first = chess.Move.from_uci(p.moves[0])
    san = board.san(first)
    board.push(first)
    shown = board_svg(board, first, solver == "White", f"{solver} to move")
    play = tag(
        "div",
        tag("div", shown, tag("div", class_="grid", role="grid", aria_label="board"), class_="stage"),
        tag(
            "div",
            tag("p", data["captions"][1], class_="status", aria_live="polite"),
            tag(
                "label", "Your move ", tag("input", type="text", class_="move", autocomplete="off", spellcheck="false")
            ),
            tag("button", "Play", type="button", class_="go"),
            Html("<br>"),
            tag("button", "Hint", type="button", class_="hint"),
            tag("button", "Solution", type="button", class_="solution"),
            tag("button", "Restart", type="button", class_="restart"),
            class_="controls",
        ),
        class_="play",
    )
    labels = ["Start", "Puzzle", *(str(k) for k in range(1, len(p.moves)))]
    steps = [tag("button", label, type="button", class_="step", data_step=k) for k, label in enumerate(labels)]
    sans = [f"{chess.Board(p.fen).fullmove_number}{'.' if opponent == 'White' else '...'}{san}"]
    solution = [tag("li", f"{move} — {role(p, i)}") for i, move in enumerate([*sans, *data["line"].split(" ")])]
    parts = [
        tag("h2", f"{number}. {solver} to move: {task(p)} ", tag("small", f"({p.puzzle_id})")),
        _meta(p),
        play,
        tag("div", steps, class_="steps", aria_label="steps of the solution"),
        # The themes name the answer ("mateIn2", "fork"): inside the solution, never above the board.
        tag("details", tag("summary", "Solution"), tag("ol", solution), tag("p", "Themes: ", " ".join(p.themes))),
        _data_block(data),
    ]
    return tag("section", Html("\n"), join(parts, Html("\n")), Html("\n"), class_="puzzle", id=p.puzzle_id)
