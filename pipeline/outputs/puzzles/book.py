"""The HTML puzzle book: one offline file in which a reader solves each puzzle on its board.

Boards are python-chess's SVG (`chess.svg`, data: images); the play code is our own (`book.js`,
no chess library: the generator computes every position, legal move and accepted answer and puts
them in the section's `data-play` attribute). Below each board, a step-through of the line with
radio buttons and CSS works without JavaScript. A Content-Security-Policy allows no network
access and no script but the book's own (by hash).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chess
import chess.svg

from pipeline.common.sanitize import clean_text
from pipeline.outputs.html import Html, document, join, tag
from pipeline.outputs.puzzles.records import Puzzle
from pipeline.outputs.puzzles.rules import mates_in_one
from pipeline.outputs.puzzles.words import colour_names, role, task

BOARD_PX = 360  # size of a board image in the HTML book
HERE = Path(__file__).resolve().parent
SCRIPT = (HERE / "book.js").read_text(encoding="utf-8")
STYLE = (HERE / "book.css").read_text(encoding="utf-8").replace("BOARDPX", str(BOARD_PX))
PIECE_NAMES = {chess.PAWN: "pawn", chess.KNIGHT: "knight", chess.BISHOP: "bishop", chess.ROOK: "rook",
               chess.QUEEN: "queen", chess.KING: "king"}  # fmt: skip
STANDARD_WORDS = {
    "default": "diffimax's standard: every solver move is the engine's best by 0.3 win chances (Lichess's "
    "blunder margin) at 500,000 nodes; a set puzzle's first move may instead be the safe move that sets "
    "the likeliest trap",
    "lichess": "lichess-puzzler's standard: every solver move is the engine's best by 0.7 win chances, at "
    "most one puzzle per game",
}


def _image(board: chess.Board, last: chess.Move | None, orientation: chess.Color) -> str:
    svg = chess.svg.board(board, size=BOARD_PX, lastmove=last, orientation=orientation, coordinates=True)
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode("ascii")


def _ghosts(solver: chess.Color) -> dict[str, str]:
    """The solver's pieces as small images, dragged under the pointer."""
    found = {}
    for kind in PIECE_NAMES:
        piece = chess.Piece(kind, solver)
        svg = chess.svg.piece(piece, size=45)
        found[piece.symbol().upper()] = "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode("ascii")
    return found


def play_data(p: Puzzle) -> dict[str, Any]:
    """What `book.js` needs to let a reader solve `p`: per solver move its legal moves (SAN), the
    pieces that can move, the moves accepted (the solution, and any mate in one where the
    solution's last move mates: Lichess accepts every mate), a hint and the prompt."""
    board = chess.Board(p.fen)
    solver = not board.turn
    steps: dict[str, Any] = {}
    sans: list[str] = []
    opponent, solver_name = colour_names(p)
    for index, uci in enumerate(p.moves):
        move = chess.Move.from_uci(uci)
        if index % 2 == 1:
            legal = {m.uci(): board.san(m) for m in board.legal_moves}
            pieces = {chess.square_name(m.from_square): board.piece_at(m.from_square) for m in board.legal_moves}
            letters = {square: piece.symbol().upper() for square, piece in pieces.items() if piece is not None}
            accept = [uci]
            if index == len(p.moves) - 1 and p.standard == "lichess" and _mates(board, move):
                accept += sorted(m.uci() for m in mates_in_one(board) if m != move)
            piece = board.piece_at(move.from_square)
            kind = PIECE_NAMES[piece.piece_type] if piece else "piece"
            prompt = f"{solver_name} to move: {task(p)}." if index == 1 else f"{sans[-1]}. Your move."
            steps[str(index)] = {"legal": legal, "pieces": letters, "accept": accept, "prompt": prompt,
                                 "hint": f"move the {kind} on {chess.square_name(move.from_square)}."}  # fmt: skip
        prefix = f"{board.fullmove_number}." if board.turn == chess.WHITE else f"{board.fullmove_number}..."
        sans.append(prefix + board.san(move))
        board.push(move)
    del opponent
    orientation = "white" if solver == chess.WHITE else "black"
    return {"orientation": orientation, "moves": list(p.moves), "steps": steps, "ghosts": _ghosts(solver),
            "line": " ".join(sans[1:])}  # fmt: skip


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
    max_steps = max((len(p.moves) + 1 for p in puzzles), default=1)
    heading = clean_text(title)
    standards = sorted({p.standard for p in puzzles})
    about = tag(
        "p",
        f"{len(puzzles)} puzzle{'' if len(puzzles) == 1 else 's'}. Play the solution on the board: click a piece "
        "and its square, drag it, or type the move (Nf3 or g1f3) and press Enter; arrow keys move between "
        "squares. A wrong move is refused; Hint names the piece; Solution shows the line. ",
        *(f"Standard met: {STANDARD_WORDS.get(name, name)}. " for name in standards),
        "In a set puzzle marked practical, the move to find is the one that gives the opponent the best chance "
        "to go wrong while giving up at most half a pawn; the trap it sets follows.",
        class_="about",
    )
    body = join([tag("h1", heading), about, *(_puzzle_html(n, p) for n, p in enumerate(puzzles, start=1))], Html("\n"))
    return document(
        heading,
        [Html("\n"), body, Html("\n"), tag("script", Html(SCRIPT)), Html("\n")],
        csp=csp,
        style=Html(STYLE + _step_css(max_steps)),
        meta=[tag("meta", name="referrer", content="no-referrer")],
    )


def _step_css(max_steps: int) -> str:
    rules = []
    for k in range(max_steps):
        rules.append(f".s{k}:checked~.boards .b{k}{{display:block}}")
        rules.append(f".s{k}:checked~.steps .l{k}{{background:#333;color:#fff}}")
        rules.append(f".s{k}:focus-visible~.steps .l{k}{{outline:2px solid #36c}}")
    return "\n".join(rules)


def _meta(p: Puzzle) -> Html:
    g = p.game
    meta: list[Html | str] = [f"{clean_text(g.white) or '?'} vs {clean_text(g.black) or '?'}"]
    meta += [clean_text(value) for value in (g.event, g.date, g.opening) if value]
    if p.game_url:
        meta.append(tag("a", "game", href=p.game_url, rel="noopener noreferrer nofollow"))
    meta.append(f"found in {len(p.game_ids)} game{'s' if len(p.game_ids) != 1 else ''}")
    if p.rating is not None:
        meta.append(f"rating {p.rating} ± {p.rating_deviation}")
    meta.append(f"standard: {p.standard}" + (f", {p.set_rule} setting move" if p.set_rule else ""))
    meta.append(" ".join(p.themes))
    return tag("p", join(meta, " · "), class_="meta")


def _puzzle_html(number: int, p: Puzzle) -> Html:
    opponent, solver = colour_names(p)
    orientation = chess.WHITE if solver == "White" else chess.BLACK
    board = chess.Board(p.fen)
    sans: list[str] = []
    images = [_image(board, None, orientation)]
    for uci in p.moves:
        move = chess.Move.from_uci(uci)
        prefix = f"{board.fullmove_number}." if board.turn == chess.WHITE else f"{board.fullmove_number}..."
        sans.append(prefix + board.san(move))
        board.push(move)
        images.append(_image(board, move, orientation))
    pid = p.puzzle_id
    inputs, labels, boards = [], [], []
    for k, image in enumerate(images):
        inputs.append(tag("input", type="radio", name=pid, id=f"{pid}-{k}", class_=f"s{k}", checked=k == 1))
        label = "Start" if k == 0 else ("Puzzle" if k == 1 else str(k - 1))
        labels.append(tag("label", label, for_=f"{pid}-{k}", class_=f"l{k}"))
        if k == 0:
            caption: list[Html | str] = [f"{opponent} to move."]
        elif k == 1:
            caption = [f"{opponent} played {sans[0]}. ", tag("strong", f"{solver} to move: {task(p)}.")]
        else:
            caption = [f"{sans[k - 1]} — {role(p, k - 1)}"]
        alt = f"Board after step {k}" if k else "Board at the start"
        boards.append(tag("figure", tag("img", src=image, alt=alt, width=BOARD_PX, height=BOARD_PX),
                          tag("figcaption", caption), class_=f"board b{k}"))  # fmt: skip
    play = tag(
        "div",
        tag(
            "div",
            tag("img", src=images[1], alt=f"{solver} to move", width=BOARD_PX, height=BOARD_PX),
            tag("div", class_="grid", role="grid", aria_label="board"),
            class_="stage",
        ),
        tag(
            "div",
            tag("p", f"{opponent} played {sans[0]}. {solver} to move: {task(p)}.", class_="status", aria_live="polite"),
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
    solution = [tag("li", f"{san} — {role(p, i)}") for i, san in enumerate(sans)]
    parts = [
        tag("h2", f"{number}. {solver} to move: {task(p)} ", tag("small", f"({pid})")),
        _meta(p),
        play,
        *inputs,
        tag("div", labels, class_="steps"),
        tag("div", boards, class_="boards"),
        tag("details", tag("summary", "Solution"), tag("ol", solution)),
    ]
    data = json.dumps(play_data(p), separators=(",", ":"), sort_keys=True)
    return tag("section", Html("\n"), join(parts, Html("\n")), Html("\n"), class_="puzzle", id=pid, data_play=data)
