"""The offline HTML explorer of a repertoire: one file in which a reader clicks through the tree on
the puzzle book's board and sees each move's expected score, practical gain, traps and the real
games' evidence, and exports the line as PGN; and drills it (`drill.js`): the student plays their
side, the opponent's replies are drawn from the predicted distribution at the rating, a trap reply
asks for its punishment, and the positions missed are remembered (localStorage) and drilled first.

The board is the puzzle book's widget (`pipeline.outputs.puzzles.book`: its style sheet, a
python-chess SVG board under a grid of square buttons); here the squares show the pieces of each
node's position (python-chess's piece images), so one page holds a tree of any size. Every figure
is formatted here from the nodes' rows (`pipeline.repertoire.records`), and `explorer.js` only
shows them. As in the book, a Content-Security-Policy allows no network access and no script but
the page's own (by hash).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import chess
import chess.svg

from pipeline.common.sanitize import clean_text
from pipeline.outputs.html import BOARD_SCRIPT, Html, document, tag
from pipeline.outputs.puzzles.book import STYLE, board_svg, shared_defs
from pipeline.outputs.repertoire.pgn import loss_words, players
from search.expectimax import within_margin
from search.notation import with_numbers
from search.values import format_pawns, format_percent, pawns_to_cp

HERE = Path(__file__).resolve().parent
# One script (the page's CSP allows it by hash): the board, the drill, the explorer that starts both.
SCRIPT = BOARD_SCRIPT + "".join((HERE / name).read_text(encoding="utf-8") for name in ("drill.js", "explorer.js"))
# The explorer's own rules, after the book's.
EXPLORER_STYLE = """
.sq{background-size:100% 100%;background-repeat:no-repeat}
.sq.last{box-shadow:inset 0 0 0 100px rgba(155,199,0,.35)}
.line button.step{margin:.1em;padding:.15em .4em;border:1px solid #999;border-radius:4px;background:#f4f4f4;
 cursor:pointer}
table.moves{border-collapse:collapse;font-size:.9em;margin:.5em 0}
table.moves th,table.moves td{padding:.2em .5em;border-bottom:1px solid #ddd;text-align:right}
table.moves td.move{text-align:left}
table.moves tr.recommended td.move button{font-weight:700}
table.moves tr.trap td{color:#a22}
table.moves button.go{border:1px solid #888;border-radius:4px;background:#f0f0f0;cursor:pointer;min-width:4.5em}
textarea.pgn{width:100%;min-height:5em;font-family:monospace}
.explorer .controls{max-width:60em}
.modes button{margin:0 .3em .3em 0;padding:.3em .9em;border:1px solid #888;border-radius:4px;background:#f0f0f0;
 cursor:pointer}
.modes button[aria-pressed=true]{background:#333;color:#fff}
.explorer.drilling .explore{display:none}
.explorer .controls.drill{max-width:30em}
.drill .drill-prompt{font-weight:600;min-height:3em}
.drill .drill-feedback.right{color:#262} .drill .drill-feedback.wrong{color:#a22;font-weight:600}
.drill .drill-summary{border-left:3px solid #999;padding-left:.6em}
.drill input.drill-move{width:8em;font-size:1em;padding:.2em}
"""
HEADINGS = ("move", "p", "value", "expected", "gain", "grown", "traps", "works", "seen", "score")


def piece_images() -> dict[str, str]:
    """Each piece (FEN letter) as a data: URI of python-chess's SVG."""
    found = {}
    for color in chess.COLORS:
        for kind in chess.PIECE_TYPES:
            piece = chess.Piece(kind, color)
            svg = chess.svg.piece(piece, size=45)
            found[piece.symbol()] = "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode("ascii")
    return found


def label(row: Mapping[str, Any]) -> str:
    """The move as a numbered SAN token ("2.Nf3", "2...Nc6")."""
    if row["move_san"] is None:
        return "Start"
    board = chess.Board(row["fen"])
    number = board.fullmove_number if board.turn == chess.BLACK else board.fullmove_number - 1
    return f"{number}.{row['move_san']}" if board.turn == chess.BLACK else f"{number}...{row['move_san']}"


def grown_words(row: Mapping[str, Any], size: int, plies: int) -> str:
    """How far the tree below a move was grown, so that two moves' figures are read for what they
    are: an estimate from one reply (a candidate `--width` left ungrown), or its subtree's nodes
    and the plies they reach below the move."""
    if row["status"] == "width":
        return "one reply (estimate)"
    if size <= 1:
        return f"leaf ({row['status']})" if row["status"] != "expanded" else "leaf"
    return f"{size - 1:,} nodes, {plies} {'ply' if plies == 1 else 'plies'}"


def subtree_sizes(rows: Sequence[Mapping[str, Any]]) -> dict[int, tuple[int, int]]:
    """Each node's subtree: its nodes (itself included) and the plies it reaches below the node."""
    found = {row["node_id"]: (1, 0) for row in rows}
    for row in sorted(rows, key=lambda r: -r["depth"]):  # children before their parents
        parent = row["parent_id"]
        if parent is None:
            continue
        size, plies = found[row["node_id"]]
        above_size, above_plies = found[parent]
        found[parent] = (above_size + size, max(above_plies, plies + 1))
    return found


def cells(row: Mapping[str, Any], size: int = 1, plies: int = 0) -> dict[str, str]:
    """The figures of a move's row as the table shows them (the test reads them back); `size` and
    `plies` are its subtree's (`subtree_sizes`)."""
    player = row["mover"] == "player"
    seen = ""
    if row.get("observed_games") is not None:
        share = row["observed_share"]
        seen = f"{row['observed_count']}/{row['observed_games']}"
        seen += "" if share is None else f" {format_percent(share)}"
    return {
        "p": "" if row["probability"] is None else format_percent(row["probability"]),
        "value": "" if row["value_cp"] is None else format_pawns(row["value_cp"]),
        "expected": "" if row["expected"] is None else format_percent(row["expected"]),
        "gain": "" if row["move_gain"] is None else format_percent(row["move_gain"], signed=True),
        "grown": grown_words(row, size, plies),
        "traps": str(row["traps"] or 0) if player else ("trap" if row["trap"] else ""),
        "works": format_percent(row["trap_probability"]) if player and row["trap_probability"] else "",
        "seen": seen,
        "score": "" if row.get("observed_score") is None else format_percent(row["observed_score"]),
        "mark": "recommended" if row["recommended"] else ("trap" if row["trap"] else ""),
    }


def summary(row: Mapping[str, Any], player: str, opponent: str) -> str:
    who = player if row["to_move"] == "player" else opponent
    text = f"{who} to move. Expected score {format_percent(row['expected'])}, practical gain "
    text += format_percent(row["gain"], signed=True)
    if row["to_move"] == "opponent" and row["source"]:
        text += f"; replies from the {row['source']}, {format_percent(row['unexplored'] or 0.0)} unexplored"
    if row["status"] != "expanded":
        text += f"; not grown further ({row['status']})"
    return text + "."


def trap_lines(row: Mapping[str, Any], children: Sequence[Mapping[str, Any]], rating: int) -> list[str]:
    """The traps of a position with the opponent to move: each reply, how many players of the
    rating play it, what it loses (pawns, or the mate it allows), its punishment (as the PGN says)."""
    found = []
    for child in sorted(children, key=lambda c: (-(c["probability"] or 0.0), c["move_uci"])):
        if child["trap"]:
            found.append(
                f"{label(child)}? {players(child['probability'], rating)}; it {loss_words(child, row)}; "
                f"punished by {clean_text(child['punishment_san'] or '(no line)')}"
            )
    return found


def tree_data(rows: Sequence[Mapping[str, Any]], start: chess.Board) -> dict[str, Any]:
    """What `explorer.js` needs: every node with its figures, the piece images, the orientation."""
    children: dict[int, list[Mapping[str, Any]]] = {}
    for row in rows:
        if row["parent_id"] is not None:
            children.setdefault(row["parent_id"], []).append(row)
    root = rows[0]
    player, opponent = ("White", "Black") if root["color"] == "white" else ("Black", "White")
    sizes = subtree_sizes(rows)
    rating = int(root["opponent_rating"])
    by_id = {row["node_id"]: row for row in rows}
    asked = drill_positions(rows)
    nodes = []
    for row in rows:
        below = children.get(row["node_id"], [])
        ordered = sorted(below, key=lambda c: (not c["recommended"], -(c["probability"] or 0.0), -(c["expected"] or 0)))
        node = {
            "id": row["node_id"],
            "parent": row["parent_id"],
            "san": row["move_san"],
            "uci": row["move_uci"],
            "mover": row["mover"],
            "toMove": row["to_move"],
            "label": label(row),
            "placement": row["fen"].split()[0],
            "children": [c["node_id"] for c in ordered],
            "cells": cells(row, *sizes[row["node_id"]]),
            "summary": summary(row, player, opponent),
            "traps": trap_lines(row, below, rating),
        }
        node.update(drill_fields(row, by_id.get(row["parent_id"]), below if row["node_id"] in asked else None))
        nodes.append(node)
    # The moves before the tree, in SAN from where they were played (`--from FEN`, else the start).
    prefix = start.root().variation_san(start.move_stack) + " " if start.move_stack else ""
    tags = "" if start.root().fen() == chess.STARTING_FEN else f'[SetUp "1"]\n[FEN "{start.root().fen()}"]\n\n'
    replay = start.root()
    words = []
    for move in start.move_stack:
        words.append(replay.san(move))
        replay.push(move)
    return {
        "orientation": "white" if root["color"] == "white" else "black",
        "pieces": piece_images(),
        "start": tags + prefix,
        "nodes": nodes,
        "drill": {
            # The drill's memory of mistakes is kept per repertoire: its start, colour and rating
            # (a tree grown again deeper or wider keeps it; its positions are named by their moves).
            "key": f"{root['fen']}|{root['color']}|{rating}",
            "player": player,
            "opponent": opponent,
            "rating": rating,
            "before": with_numbers(start.root(), words),
        },
    }


def drill_positions(rows: Sequence[Mapping[str, Any]]) -> set[int]:
    """The nodes where the drill can ask the student for a move: the player to move, reached by the
    recommended player moves (the only ones the drill plays) and any opponent replies."""
    reached: set[int] = set()
    for row in rows:  # parents come before their children
        parent = row["parent_id"]
        if parent is None or (parent in reached and (row["mover"] != "player" or row["recommended"])):
            reached.add(row["node_id"])
    return {row["node_id"] for row in rows if row["node_id"] in reached and row["to_move"] == "player"}


def sound_moves(row: Mapping[str, Any], children: Sequence[Mapping[str, Any]]) -> list[str]:
    """The player's moves the tree has at a node that keep within the safety margin of its best
    (the recommended one among them): a student who plays one has played a sound move, not the
    repertoire's."""
    values = {c["move_san"]: c["value_cp"] for c in children if c["value_cp"] is not None}
    margin = row["safety_margin"]
    return within_margin(values, None if margin is None else pawns_to_cp(margin))


def drill_fields(
    row: Mapping[str, Any], parent: Mapping[str, Any] | None, children: Sequence[Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """What the drill (`drill.js`) needs of a node beyond the explorer's: whether its move is the
    recommended one; for an opponent's reply its probability (`p`, to draw it; never shown) and
    how the rows say it (`share`, "48 %"); for a trap, its loss in words and the punishment's first
    move (numbered SAN, and its UCI to draw the board after it). Where the drill asks (`children`
    given: `drill_positions`), the legal moves (SAN and UCI, so that a typed move is read as a move
    or said to be none) and the sound ones (`sound_moves`)."""
    found: dict[str, Any] = {}
    if children is not None:
        board = chess.Board(row["fen"])
        legal = list(board.legal_moves)
        found["legal"] = [board.san(move) for move in legal]
        found["legalUci"] = [move.uci() for move in legal]
        found["sound"] = sound_moves(row, children)
        margin = row["safety_margin"]
        found["margin"] = None if margin is None else format_pawns(pawns_to_cp(margin), signed=False)
    if row["recommended"]:
        found["recommended"] = True
    if row["mover"] == "opponent" and row["probability"] is not None:
        found["p"] = round(float(row["probability"]), 6)
        found["share"] = format_percent(row["probability"])
    if row["trap"] and row["punishment_san"] and row["punishment_uci"] and parent is not None:
        found["trap"] = {
            "loss": loss_words(row, parent),
            "punish": clean_text(row["punishment_san"].split()[0]),
            "punishUci": row["punishment_uci"][0],
        }
    return found


def drill_panel() -> tuple[Html, Html]:
    """The drill's controls (hidden until chosen: `drill.js`) and the buttons that switch between
    exploring and drilling."""
    panel = tag(
        "div",
        tag("h3", "Drill"),
        tag("p", class_="drill-prompt", aria_live="polite"),
        tag("p", class_="drill-feedback", aria_live="polite"),
        tag(
            "p",
            tag(
                "label",
                "Your move (SAN, e.g. Nf3): ",
                tag("input", type="text", class_="drill-move", autocomplete="off"),
            ),
            tag("button", "Play", type="button", class_="drill-play"),
            tag("button", "New line", type="button", class_="drill-new"),
        ),
        tag("p", class_="drill-summary"),
        tag("p", class_="drill-memory"),
        tag("button", "Forget my mistakes", type="button", class_="drill-forget"),
        class_="controls drill",
        hidden=True,
    )
    modes = tag(
        "p",
        tag("button", "Explore", type="button", class_="mode-explore", aria_pressed="true"),
        tag("button", "Drill", type="button", class_="mode-drill", aria_pressed="false"),
        class_="modes",
    )
    return panel, modes


def render_explorer(rows: Sequence[Mapping[str, Any]], start: chess.Board, *, title: str | None = None) -> str:
    """The explorer page (see the module docstring)."""
    root = rows[0]
    color = chess.WHITE if root["color"] == "white" else chess.BLACK
    heading = clean_text(title or f"Repertoire: {root['color']} against {root['opponent_rating']}")
    script_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode("ascii")
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{script_hash}'; base-uri 'none'; form-action 'none'"
    )
    about = tag(
        "p",
        f"{len(rows)} positions; opponents rated {root['opponent_rating']}"
        f"{' (' + root['pool'] + ')' if root['pool'] else ''}; plies {root['plies']}, floor {root['floor']}, "
        f"width {root['width']} ({root['root_width']} at the first moves), engine {root['engine']}. "
        "Click a move in the table, or a piece and its square. "
        "Expected: the expected score against humans (Lichess's win-chance curve, in percent: the points of "
        "Win%); gain: what the move adds over best play by both sides; grown: how far the tree below the move "
        "was grown (compare two moves' figures knowing it; 'one reply' marks an estimate); p: how likely a human "
        "of the rating plays the reply; works: how often one of the traps it sets is played; a trap's loss is in "
        "pawns (#N: the mate it allows); seen / score: the real games of --data. Drill: play your side; the "
        "opponent replies as players of the rating do; when a trap comes, find its punishment. The positions "
        "you miss are remembered in this browser and drilled first.",
        class_="about",
    )
    head_row = tag("tr", [tag("th", name) for name in HEADINGS])
    controls = tag(
        "div",
        tag("p", class_="line"),
        tag("p", class_="status", aria_live="polite"),
        tag("table", tag("thead", head_row), tag("tbody"), class_="moves"),
        tag("button", "Back", type="button", class_="back"),
        tag("button", "Export line", type="button", class_="export"),
        tag("h3", "Traps set here"),
        tag("ul", class_="traps"),
        tag("textarea", class_="pgn", readonly=True, hidden=True, aria_label="the line as PGN"),
        class_="controls explore",
    )
    drill, modes = drill_panel()
    stage = tag(
        "div",
        # The book's board: its squares fill the stage the square buttons cover, and the coordinates
        # sit in the squares' corners (python-chess's bordered board put its squares 4 % inside the
        # buttons, and its file letters under the pieces of the first rank).
        board_svg(chess.Board(None), None, color == chess.WHITE, "board"),
        tag("div", class_="grid", role="grid", aria_label="board"),
        class_="stage",
    )
    data = json.dumps(tree_data(rows, start), separators=(",", ":"), sort_keys=True)
    section = tag(
        "section", modes, tag("div", stage, controls, drill, class_="play"), class_="explorer", data_tree=data
    )
    return document(
        heading,
        [shared_defs(), tag("h1", heading), about, section, tag("script", Html(SCRIPT))],
        csp=csp,
        style=Html(STYLE + EXPLORER_STYLE),
        meta=[tag("meta", name="referrer", content="no-referrer")],
    )
