"""`diffimax report`: one self-contained HTML page about a mined dataset.

The page holds the run's manifest, plots of the saved queries that matter most (PNG, embedded as
data URIs), every saved query as a table, the top trap positions drawn as boards (inline SVG from
`chess.svg`), the top players and the errors. It needs no JavaScript and loads nothing: its
Content-Security-Policy forbids scripts and any request but `data:` images.

Everything the data holds came from strangers' PGN headers (player names, events, game ids) and
reaches the page only through the builder of `pipeline.outputs.html` (`tag` escapes every plain
`str`, after `pipeline.common.sanitize` has replaced what is not XML text). The page is also
well-formed XML, which the tests check. Its SQL beyond the saved queries is in `schemas/report.sql`.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import chess
import chess.svg
import duckdb

from pipeline.dataset.duck import connect, open_dataset
from pipeline.dataset.integrity import DatasetState, damage_named
from pipeline.dataset.queries import QueryResult, RequirementError, run_saved, saved_queries
from pipeline.dataset.sql import query
from pipeline.outputs.html import Content, Html, document, join, tag, text
from search.errors import DiffimaxError

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# File name of the page inside the output directory.
REPORT_NAME: Final = "report.html"
# Trap positions drawn as boards (the table below them lists every row of the saved query).
BOARDS_SHOWN: Final = 12
# Width and height of a board, in CSS pixels.
BOARD_PIXELS: Final = 300
# Trap candidates and example games listed beside each board.
CANDIDATES_SHOWN: Final = 5
GAMES_PER_BOARD: Final = 3
# Plot size in inches at PLOT_DPI (640 x 360 pixels).
PLOT_INCHES: Final = (6.4, 3.6)
PLOT_DPI: Final = 100
# Error rows quoted in the errors section (the counts cover all of them).
ERRORS_SHOWN: Final = 20
# Width of the rating bands of fall-rate-by-rating, in rating points.
RATING_BAND: Final = 200
# Saved queries with a section of their own; every other saved query is a table under "Saved queries".
OWN_SECTION: Final = frozenset({"top-trap-positions", "top-players", "judge-comparison"})
# Columns shown as percentages.
RATE_COLUMNS: Final = frozenset(
    {
        "wilson_low",
        "wilson_high",
        "fall_rate",
        "play_rate",
        "chance_rate",
        "fall_rate_low",
        "fall_rate_high",
        "trap_node_share",
    }
)
# Arrow colours of chess.svg (its defaults: translucent green and red).
BEST_ARROW: Final = "green"
TRAP_ARROW: Final = "red"

# Element ids and references inside a chess.svg board (made unique per board).
_SVG_ID = re.compile(r'(\bid="|href="#|url\(#)')


class ReportError(DiffimaxError, ValueError):
    """A dataset whose manifest cannot be read."""


# ---------------------------------------------------------------------------------------------
# Data


def records(result: QueryResult) -> list[dict[str, Any]]:
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def read_manifest(dataset: Path) -> dict[str, Any] | None:
    """The run's manifest.json, or None when the dataset has none."""
    path = dataset / "manifest.json"
    if not path.exists():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ReportError(f"unreadable manifest {str(path)!r}: {error}") from None
    if not isinstance(manifest, dict):
        raise ReportError(f"unreadable manifest {str(path)!r}: expected a JSON object")
    return manifest


def _grouped(
    connection: duckdb.DuckDBPyConnection, sql: str, parameters: dict[str, Any]
) -> dict[int, list[dict[str, Any]]]:
    cursor = connection.execute(sql, parameters)
    columns = [column[0] for column in cursor.description]
    grouped: dict[int, list[dict[str, Any]]] = {}
    for row in cursor.fetchall():
        record = dict(zip(columns, row, strict=True))
        grouped.setdefault(record["position_key"], []).append(record)
    return grouped


# ---------------------------------------------------------------------------------------------
# Plots


def png_data_uri(draw: Callable[[Axes], str | None]) -> tuple[str, str | None]:
    """Draws one plot with matplotlib's Agg canvas (no display, no pyplot state); returns the PNG
    as a data URI and the note `draw` returns when there was nothing to plot."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=PLOT_INCHES, dpi=PLOT_DPI, layout="constrained")
    FigureCanvasAgg(figure)
    note = draw(figure.add_subplot())
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii"), note


def _no_data(axes: Axes, reason: str) -> str:
    axes.text(0.5, 0.5, f"no data\n{reason}", ha="center", va="center", transform=axes.transAxes, color="#5b6670")
    axes.set_xticks([])
    axes.set_yticks([])
    return f"No data: {reason}."


def _interval(row: dict[str, Any], rate: str) -> tuple[float, float, float]:
    """The rate and how far its Wilson interval reaches below and above it (never negative: the
    SQL bounds can miss the rate by rounding, e.g. a low bound of 1e-17 for a rate of 0)."""
    value = _number(row[rate]) or 0.0
    low = _number(row["wilson_low"])
    high = _number(row["wilson_high"])
    return value, max(0.0, value - (value if low is None else low)), max(0.0, (value if high is None else high) - value)


def _rates(axes: Axes, x: list[float], rows: list[dict[str, Any]], rate: str, count: str) -> None:
    """Points with their Wilson 95% interval, each labelled with the count behind it."""
    from matplotlib.ticker import PercentFormatter

    y, low, high = (list(values) for values in zip(*(_interval(row, rate) for row in rows), strict=True))
    axes.errorbar(x, y, yerr=[low, high], fmt="o", capsize=4, color="#1f5f8b", ecolor="#7a9cb8")
    for x_value, y_value, row in zip(x, y, rows, strict=True):
        axes.annotate(
            f"n={row[count]}",
            (x_value, y_value),
            xytext=(5, 4),
            textcoords="offset points",
            fontsize=7,
            color="#5b6670",
        )
    axes.yaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_ylim(bottom=0)
    axes.margins(x=0.08)
    axes.grid(alpha=0.3)


def plot_rating(result: QueryResult) -> Callable[[Axes], str | None]:
    def draw(axes: Axes) -> str | None:
        rows = [row for row in records(result) if row["trap_nodes"] and row["rating_band"] is not None]
        if not rows:
            return _no_data(axes, "no trap node has a rated responder")
        _rates(axes, [float(row["rating_band"]) + RATING_BAND / 2 for row in rows], rows, "fall_rate", "trap_nodes")
        axes.set_xlabel(f"responder's rating ({RATING_BAND}-point bands, at their centre)")
        axes.set_ylabel("fall rate at trap nodes")
        return None

    return draw


def plot_clock(result: QueryResult) -> Callable[[Axes], str | None]:
    def draw(axes: Axes) -> str | None:
        rows = [row for row in records(result) if row["trap_nodes"] and row["clock"] is not None]
        if not rows:
            return _no_data(axes, "the games carry no clock times (%clk comments)")
        _rates(axes, [float(i) for i in range(len(rows))], rows, "fall_rate", "trap_nodes")
        # The query sorts its buckets by a "N: " prefix; the axis shows the rest.
        axes.set_xticks(range(len(rows)), [str(row["clock"]).partition(": ")[2] or str(row["clock"]) for row in rows])
        axes.set_xlabel("responder's clock when deciding")
        axes.set_ylabel("fall rate at trap nodes")
        return None

    return draw


def plot_dip(result: QueryResult) -> Callable[[Axes], str | None]:
    def draw(axes: Axes) -> str | None:
        rows = [row for row in records(result) if row["candidates"] and row["dip_from"] is not None]
        if not rows:
            return _no_data(axes, "no trap candidates at analysed positions")
        x = [(float(row["dip_from"]) + float(row["dip_to"])) / 2 for row in rows]
        _rates(axes, x, rows, "play_rate", "candidates")
        axes.set_xlabel("dip of the trap candidate (pawns, 0.25-pawn buckets)")
        axes.set_ylabel("how often it was played")
        return None

    return draw


def plot_lift(result: QueryResult) -> Callable[[Axes], str | None]:
    def draw(axes: Axes) -> str | None:
        from matplotlib.ticker import PercentFormatter

        rows = [row for row in records(result) if row["trap_nodes"] and row["fall_rate"] is not None]
        if not rows:
            return _no_data(axes, "no trap nodes with a meaningful reply")
        row = rows[0]
        observed, below, above = _interval(row, "fall_rate")
        chance = _number(row["chance_rate"]) or 0.0
        axes.bar([0, 1], [observed, chance], color=["#a3262a", "#9aa5ae"], width=0.55)
        axes.errorbar([0], [observed], yerr=[[below], [above]], capsize=6, color="#1d232a")
        axes.set_xticks([0, 1], ["observed fall rate", "chance: a random meaningful reply"])
        axes.yaxis.set_major_formatter(PercentFormatter(1.0))
        axes.set_ylabel("share of trap nodes")
        lift = _number(row["lift"])
        axes.set_title(
            f"lift {lift:.2f}x over {row['trap_nodes']} trap nodes" if lift is not None else "lift: n/a", fontsize=10
        )
        axes.grid(axis="y", alpha=0.3)
        return None

    return draw


# Plots: (saved query, title, how to read it, drawer).
PLOTS: Final[tuple[tuple[str, str, str, Callable[[QueryResult], Callable[[Axes], str | None]]], ...]] = (
    (
        "fall-rate-by-rating",
        "Fall rate by rating",
        "Share of trap nodes where the responder played a trap candidate, by the responder's rating; bars are "
        "Wilson 95% intervals, n is the number of trap nodes.",
        plot_rating,
    ),
    (
        "fall-rate-by-clock",
        "Fall rate by clock",
        "The same by the time the responder had left when deciding (from %clk comments).",
        plot_clock,
    ),
    (
        "fall-rate-by-dip",
        "Play rate by dip",
        "How often a trap candidate at the root was the move played, by how much it loses (its dip).",
        plot_dip,
    ),
    (
        "lift",
        "Lift: observed against chance",
        "Observed fall rate against the rate of a uniformly random meaningful reply; lift = observed falls / "
        "falls expected by chance.",
        plot_lift,
    ),
)


# ---------------------------------------------------------------------------------------------
# Rendering


def cell(column: str, value: Any) -> Html:
    if value is None:
        return Html("")
    if isinstance(value, bool):
        return text("yes" if value else "no")
    if isinstance(value, float) and column in RATE_COLUMNS:
        return text(f"{value:.1%}")
    if isinstance(value, float):
        return text(f"{value:.4g}")
    if column in ("fen", "node_fen"):
        return tag("code", value)
    return text(value)


def table(result: QueryResult, *, empty: str = "No rows.") -> Html:
    if not result.rows:
        return tag("p", empty, class_="note")
    head = tag("tr", [tag("th", column) for column in result.columns])
    body = [
        tag(
            "tr",
            [
                tag("td", cell(column, value), class_="num" if _is_number(value) else None)
                for column, value in zip(result.columns, row, strict=True)
            ],
        )
        for row in result.rows
    ]
    return tag("div", tag("table", tag("thead", head), tag("tbody", body)), class_="table-wrap")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def facts(items: Iterable[tuple[str, Content]]) -> Html:
    return tag("dl", [join([tag("dt", name), tag("dd", value)]) for name, value in items], class_="facts")


def _count(manifest: dict[str, Any], key: str) -> str:
    value = manifest.get(key)
    return f"{value:,}" if isinstance(value, int) else "?"


def _pairs(mapping: Any) -> str:
    if not isinstance(mapping, dict):
        return "?" if mapping is None else str(mapping)
    return ", ".join(f"{key} {value}" for key, value in mapping.items() if value is not None)


def _when(seconds: Any) -> str:
    if not isinstance(seconds, int | float):
        return "?"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def summary_section(dataset: Path, manifest: dict[str, Any] | None, lift: QueryResult) -> Html:
    items: list[tuple[str, Content]] = [("dataset", tag("code", str(dataset)))]
    if manifest is None:
        note = tag("p", "This dataset has no manifest.json: the run's counts and settings are unknown.", class_="note")
    else:
        m = manifest
        note = Html("")
        engine: dict[str, Any] = m["engine"] if isinstance(m.get("engine"), dict) else {}
        inputs: list[Any] = m["inputs"] if isinstance(m.get("inputs"), list) else []
        items += [
            ("inputs", tag("ul", [tag("li", tag("code", str(item))) for item in inputs], class_="plain")),
            (
                "games",
                f"{_count(m, 'games_read')} read = {_count(m, 'games_written')} mined + "
                f"{_count(m, 'games_filtered')} filtered + {_count(m, 'games_error')} with errors",
            ),
            (
                "positions",
                f"{_count(m, 'positions')}: {_count(m, 'positions_analysed')} analysed, "
                f"{_count(m, 'positions_reused')} reused from repeats, {_count(m, 'positions_error')} failed",
            ),
            ("trap records", _count(m, "traps")),
            ("engine", f"{engine.get('name', '?')} ({_pairs({k: v for k, v in engine.items() if k != 'name'})})"),
            ("settings", _pairs(m.get("settings"))),
            ("game filter", _pairs(m.get("filter"))),
            ("workers", str(m.get("workers", "?"))),
            (
                "run",
                f"{_when(m.get('started'))} to {_when(m.get('finished'))}, "
                + (f"{m['wall_seconds']:,.1f} s" if isinstance(m.get("wall_seconds"), int | float) else "? s"),
            ),
            ("versions", _pairs(m.get("versions"))),
            ("schema version", str(m.get("schema_version", "?"))),
        ]
    rows = records(lift)
    if rows and rows[0]["trap_nodes"]:
        row = rows[0]
        items.append(
            (
                "trap nodes",
                f"{row['trap_nodes']:,} positions had a trap candidate; the human fell {row['fell']:,} times "
                f"({(_number(row['fall_rate']) or 0):.1%}, 95% interval {(_number(row['wilson_low']) or 0):.1%} to "
                f"{(_number(row['wilson_high']) or 0):.1%})",
            )
        )
    else:
        items.append(("trap nodes", "none"))
    return tag("section", tag("h2", "Summary"), note, facts(items), id="summary")


def plots_section(results: dict[str, QueryResult]) -> Html:
    figures = []
    for name, title, reading, drawer in PLOTS:
        result = results.get(name)
        if result is None:
            continue
        uri, note = png_data_uri(drawer(result))
        width, height = (round(side * PLOT_DPI) for side in PLOT_INCHES)
        caption = tag(
            "figcaption",
            tag("strong", title),
            " ",
            reading,
            " ",
            tag("span", note, class_="note") if note else None,
            " ",
            tag("code", name),
        )
        figures.append(
            tag(
                "figure",
                tag("img", src=uri, alt=f"{title} ({note or 'plot'})", width=width, height=height),
                caption,
                class_="plot",
                data_query=name,
            )
        )
    return tag("section", tag("h2", "Plots"), tag("div", figures, class_="plots"), id="plots")


def _move(board: chess.Board, uci: Any) -> chess.Move | None:
    """`uci` as a legal move of `board`, or None."""
    try:
        move = chess.Move.from_uci(str(uci))
    except ValueError:
        return None
    return move if board.is_legal(move) else None


def _san(board: chess.Board, uci: Any) -> str:
    move = _move(board, uci)
    return board.san(move) if move is not None else str(uci)


def board_svg(board: chess.Board, index: int, *, best: Any, trap: Any, last: Any) -> Html:
    """The position from the responder's side, the best reply as a green arrow and the trap
    candidate as a red one, the move that led here highlighted when known."""
    arrows = []
    for uci, color in ((best, BEST_ARROW), (trap, TRAP_ARROW)):
        move = _move(board, uci)
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
        size=BOARD_PIXELS,
        check=board.king(board.turn) if board.is_check() else None,
    )
    return Html(_SVG_ID.sub(rf"\g<1>b{index}-", svg))


def _side(color: chess.Color) -> str:
    return "White" if color == chess.WHITE else "Black"


def _player(name: Any, rating: Any) -> str:
    return f"{name if name is not None else '?'}" + (f" ({rating})" if rating is not None else "")


def position_card(index: int, row: dict[str, Any], extra: dict[str, dict[int, list[dict[str, Any]]]]) -> Html:
    key = row["position_key"]
    candidates = extra["candidates"].get(key, [])
    played = extra["played"].get(key, [])
    last = extra["last"].get(key, [])
    games = extra["games"].get(key, [])
    rate = _number(row["fall_rate"]) or 0.0
    heading = tag("h3", f"#{index} ", tag("span", f"{row['games']} games, fell {row['fell']} ({rate:.0%})"))
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
        board_svg(board, index, best=row["best_move"], trap=trap, last=last[0]["move_uci"] if last else None),
        class_="board",
    )
    candidate_items = [
        tag(
            "li",
            tag("span", _san(board, c["move"]), class_="trap" if i == 0 else None),
            f" dip {c['dip'] / 100:.2f}, played {c['played']} of {c['occurrences']}",
        )
        for i, c in enumerate(candidates[:CANDIDATES_SHOWN])
    ]
    more = len(candidates) - CANDIDATES_SHOWN
    if more > 0:
        candidate_items.append(tag("li", f"and {more} more", class_="note"))
    humans = ", ".join(f"{p['move_san']} x{p['times']} ({p['outcome']})" for p in played)
    game_items = [
        tag(
            "li",
            f"{_player(g['white'], g['white_elo'])} vs {_player(g['black'], g['black_elo'])}",
            tag("br"),
            tag(
                "span",
                f"{g['event'] or '?'}, {g['date'] or '?'}; game ",
                tag("code", g["game_id"]),
                f", ply {g['ply']}, played {g['move_san']} ({g['outcome']})",
                class_="meta",
            ),
        )
        for g in games
    ]
    lines = facts(
        [
            ("FEN", tag("code", row["fen"])),
            ("to move", f"{_side(board.turn)} (the responder); {_side(not board.turn)} set the trap"),
            ("best reply", tag("span", _san(board, row["best_move"]), class_="best")),
            ("trap candidates", tag("ol", candidate_items, class_="plain") if candidate_items else "none recorded"),
            ("humans played", humans or "?"),
            (
                "fall rate",
                f"{rate:.1%} (95% interval {(_number(row['wilson_low']) or 0):.1%} to "
                f"{(_number(row['wilson_high']) or 0):.1%})",
            ),
            ("games", tag("ul", game_items, class_="plain")),
        ]
    )
    return tag("article", heading, drawing, lines, class_="card")


def traps_section(connection: duckdb.DuckDBPyConnection, result: QueryResult) -> Html:
    rows = records(result)[:BOARDS_SHOWN]
    intro = tag(
        "p",
        "Positions that were trap nodes most often. Each board is seen from the responder's side: the ",
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
    keys = [row["position_key"] for row in rows]
    extra = {
        "candidates": _grouped(connection, query("report", "trap-candidates"), {"keys": keys}),
        "played": _grouped(connection, query("report", "humans-played"), {"keys": keys}),
        "last": _grouped(connection, query("report", "last-move"), {"keys": keys}),
        "games": _grouped(connection, query("report", "example-games"), {"keys": keys, "limit": GAMES_PER_BOARD}),
    }
    cards = [position_card(i, row, extra) for i, row in enumerate(rows, start=1)]
    return tag(
        "section",
        tag("h2", "Top trap positions"),
        intro,
        tag("div", cards, class_="boards"),
        tag("h3", "All rows of ", tag("code", "top-trap-positions")),
        table(result),
        id="trap-positions",
    )


def judges_section(result: QueryResult, primary: str | None) -> Html:
    reading = (
        "Every trap judge the dataset recorded, on the same positions: how many positions it calls trap "
        "nodes, how many candidates it names there, how often the human played one (the fall rate), and "
        "how much more often than a uniformly random meaningful reply would have (lift), with 95 % Wilson "
        f"intervals. The rest of the report shows the {primary or 'primary'} judge's verdicts."
    )
    return tag("section", tag("h2", "The trap judges side by side"), tag("p", reading), table(result), id="judges")


def players_section(result: QueryResult) -> Html:
    reading = (
        "Players who set the most traps their opponents fell for (opponents_fell) and who fell the most "
        "(fell), over the trap nodes they set and faced."
    )
    return tag("section", tag("h2", "Top players"), tag("p", reading), table(result), id="players")


def tables_section(results: dict[str, QueryResult], descriptions: dict[str, str], unmet: dict[str, str]) -> Html:
    parts = []
    for name, description in descriptions.items():
        if name in OWN_SECTION:
            continue
        parts.append(tag("h3", tag("code", name)))
        parts.append(tag("p", description))
        result = results.get(name)
        parts.append(table(result) if result is not None else tag("p", unmet.get(name, "Not run."), class_="note"))
    return tag("section", tag("h2", "Saved queries"), join(parts), id="tables")


def errors_section(connection: duckdb.DuckDBPyConnection) -> Html:
    counts = connection.execute(query("report", "error-counts")).fetchall()
    if not counts:
        return tag("section", tag("h2", "Errors"), tag("p", "No errors.", class_="note"), id="errors")
    cursor = connection.execute(query("report", "first-errors"), {"limit": ERRORS_SHOWN})
    shown = QueryResult([column[0] for column in cursor.description], cursor.fetchall())
    total = sum(count for _, count in counts)
    summary = ", ".join(f"{count:,} at {stage}" for stage, count in counts)
    note = f"The first {len(shown.rows)} of {total:,}:" if total > len(shown.rows) else "All of them:"
    return tag(
        "section", tag("h2", "Errors"), tag("p", f"{total:,} errors ({summary}). {note}"), table(shown), id="errors"
    )


def manifest_section(manifest: dict[str, Any] | None) -> Html:
    body = (
        tag("details", tag("summary", "manifest.json"), tag("pre", json.dumps(manifest, indent=2, sort_keys=True)))
        if manifest is not None
        else tag("p", "No manifest.json.", class_="note")
    )
    return tag("section", tag("h2", "Manifest"), body, id="manifest")


SECTIONS: Final = (
    ("summary", "Summary"),
    ("plots", "Plots"),
    ("trap-positions", "Top trap positions"),
    ("players", "Top players"),
    ("tables", "Saved queries"),
    ("errors", "Errors"),
    ("manifest", "Manifest"),
)

# No scripts, no requests: only inline styles and data: images.
CONTENT_SECURITY_POLICY: Final = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

CSS: Final = Html("""
:root { --ink: #1d232a; --muted: #5b6670; --line: #d9dee3; --best: #15781b; --trap: #a3262a; }
* { box-sizing: border-box; }
body { margin: 0; background: #f4f5f7; color: var(--ink);
       font: 15px/1.45 "Liberation Sans", "DejaVu Sans", Arial, Helvetica, sans-serif; }
header.top { background: #1d232a; color: #fff; padding: 16px 28px; }
header.top h1 { margin: 0 0 4px; font-size: 22px; }
header.top p { margin: 0; color: #c9d1d9; font-size: 13px; }
nav { padding: 8px 28px; background: #fff; border-bottom: 1px solid var(--line); font-size: 14px; }
nav a { margin-right: 16px; color: #1f5f8b; text-decoration: none; }
main { max-width: 1240px; margin: 0 auto; padding: 4px 24px 40px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 20px; margin: 16px 0; }
h2 { margin: 0 0 10px; font-size: 19px; }
h3 { margin: 16px 0 6px; font-size: 15px; }
.card h3 { margin-top: 0; }
code, pre { font-family: "Liberation Mono", "DejaVu Sans Mono", monospace; font-size: 12px; }
code { overflow-wrap: anywhere; }
pre { white-space: pre-wrap; background: #f4f5f7; padding: 8px; border-radius: 4px; }
.note { color: var(--muted); font-style: italic; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
ul.plain, ol.plain { margin: 0; padding-left: 18px; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; margin: 4px 0 8px; }
th, td { padding: 3px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #eef1f4; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.plots { display: grid; grid-template-columns: repeat(auto-fit, minmax(540px, 1fr)); gap: 18px; }
figure { margin: 0; }
figure.plot img { display: block; max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { font-size: 13px; margin-top: 6px; }
.boards { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 16px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; font-size: 13px; }
figure.board { margin: 6px 0 10px; }
figure.board svg { display: block; width: 300px; height: 300px; }
.best { color: var(--best); font-weight: 600; }
.trap { color: var(--trap); font-weight: 600; }
.meta { color: var(--muted); }
""")


def render_page(title: str, sections: list[Html], subtitle: str) -> str:
    nav = tag("nav", [tag("a", label, href=f"#{anchor}") for anchor, label in SECTIONS])
    top = tag("header", tag("h1", title), tag("p", subtitle), class_="top")
    return document(title, [top, nav, tag("main", sections)], csp=CONTENT_SECURITY_POLICY, style=CSS)


def write_report(data: str | Path, out: str | Path, *, allow_partial: bool = False) -> Path:
    """Write OUT/report.html about the dataset in `data` (`diffimax mine --out`); returns its path.

    Raises `pipeline.dataset.duck.DatasetError` when `data` holds no dataset, or a missing or
    damaged shard (unless `allow_partial`: then the page says what it leaves out), and
    `ReportError` when its manifest is unreadable; creates `out` when missing and replaces an
    earlier report atomically.
    """
    dataset = Path(data)
    manifest = read_manifest(dataset)  # an unreadable one is its own error, before the shards' check
    state = open_dataset(dataset, allow_partial=allow_partial)
    connection = connect(state)
    try:
        with damage_named(state):
            sections = report_sections(state, manifest, connection)
    finally:
        connection.close()
    written = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    subtitle = f"{dataset.resolve()} · written {written}" + (f" · {state.note()}" if state.partial else "")
    page = render_page(f"diffimax report: {dataset.resolve().name}", sections, subtitle)
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    path = target / REPORT_NAME
    partial = target / f".{REPORT_NAME}.partial"
    partial.write_text(page, encoding="utf-8")
    os.replace(partial, path)
    return path


def report_sections(
    state: DatasetState, manifest: dict[str, Any] | None, connection: duckdb.DuckDBPyConnection
) -> list[Html]:
    """The page's sections, from the checked dataset `state`, its manifest and its open `connection`."""
    dataset = state.root
    queries = saved_queries()
    results: dict[str, QueryResult] = {}
    unmet: dict[str, str] = {}  # saved queries this dataset cannot answer, and why
    for name in queries:
        try:
            results[name] = run_saved(state, name)
        except RequirementError as error:
            unmet[name] = str(error)
    descriptions = {name: saved.description for name, saved in queries.items()}
    empty = QueryResult([], [])
    return [
        summary_section(dataset.resolve(), manifest, results.get("lift", empty)),
        judges_section(results.get("judge-comparison", empty), (manifest or {}).get("primary_judge")),
        plots_section(results),
        traps_section(connection, results.get("top-trap-positions", empty)),
        players_section(results.get("top-players", empty)),
        tables_section(results, descriptions, unmet),
        errors_section(connection),
        manifest_section(manifest),
    ]
