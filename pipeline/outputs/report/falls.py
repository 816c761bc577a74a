"""The report's fall probability section: how well the predicted fall probability (`fall_p`) met
the falls humans really made (the reliability plot of the saved query `calibration`, and its
per-group totals), and the positions where humans fell most (`trickiest-positions`), each drawn as a
small board from the responder's side beside its observed and predicted rates."""

from __future__ import annotations

from typing import Any, Final

import chess

from pipeline.dataset.queries import QueryResult
from pipeline.outputs.html import Html, tag
from pipeline.outputs.report.boards import game_link, reply_board_svg
from pipeline.outputs.report.data import SavedResults, number, records
from pipeline.outputs.report.plots import PLOT_DPI, PLOT_INCHES, plot_calibration, png_data_uri
from pipeline.outputs.report.sections import table
from search.values import format_percent, format_percent_points

# Rows of trickiest-positions shown (the saved query lists up to 50).
TRICKIEST_SHOWN: Final = 10
# Width and height of their boards, in CSS pixels.
MINI_BOARD_PIXELS: Final = 150
# The columns of calibration's per-group totals shown as a table.
TOTAL_COLUMNS: Final = (
    "grouping",
    "group_value",
    "occurrences",
    "fell",
    "fall_p",
    "wilson_low",
    "fall_rate",
    "wilson_high",
    "ece",
    "brier",
    "played_unvalued",
)

READING: Final = (
    "At every judged position where the practical judge had human evidence, the judging estimates fall_p: the "
    "probability that a human of the responder's rating plays a reply losing at least the practical judge's "
    "--practical-drop of win chance (losses here are points of Lichess's Win%, 0-100). The human fell there "
    "when the move played lost that much (an occurrence whose played move has no value is left out: "
    "played_unvalued). Perfectly calibrated estimates lie on the diagonal; the ECE is the mean distance from "
    "it, weighted by occurrences, and the Brier score the mean squared error of fall_p against the fall (0 is "
    "perfect, 0.25 a constant 50 %)."
)


def _percent(value: Any) -> str:
    found = number(value)
    return "" if found is None else f"{format_percent(found)}"


def _interval(row: dict[str, Any]) -> str:
    return f"{_percent(row['fall_rate'])} ({_percent(row['wilson_low'])} to {_percent(row['wilson_high'])})"


def _position_cells(index: int, row: dict[str, Any]) -> list[Html]:
    """The board and the moves of one row (their FEN is the board, never shown as text)."""
    try:
        board = chess.Board(str(row["fen"]))
    except ValueError:
        return [tag("td", "unreadable position", class_="note"), tag("td"), tag("td")]
    drawing = reply_board_svg(
        board,
        index,
        best=row["best_move_uci"],
        trap=row["fell_with_uci"],
        last=None,
        size=MINI_BOARD_PIXELS,
        prefix="f",
        coordinates=False,
    )
    mover = "White" if board.turn == chess.WHITE else "Black"
    return [
        tag("td", tag("figure", drawing, class_="mini-board"), tag("span", f"{mover} to move", class_="meta")),
        tag("td", tag("span", row["best_move"], class_="best")),
        tag("td", tag("span", row["fell_with"] or "", class_="trap")),
    ]


def _who(row: dict[str, Any]) -> str:
    band = row["rating_band"]
    parts = [f"{band}-{band + 199}" if band is not None else "", str(row["clock"] or "").partition(": ")[2]]
    return ", ".join(part for part in parts if part) or "no rating or clock"


def _trickiest_row(index: int, row: dict[str, Any]) -> Html:
    game = game_link("a game where it happened", row["example_game"]) if row["example_game"] else ""
    few = tag("span", " (fewer than 3)", class_="note") if row["few_occurrences"] else ""
    return tag(
        "tr",
        tag("td", str(index), class_="num"),
        *_position_cells(index, row),
        tag("td", _who(row)),
        tag("td", row["opening"] or "", tag("br"), game),
        tag("td", f"{row['fell']} of {row['occurrences']}", few, class_="num"),
        tag("td", _interval(row), class_="num"),
        tag("td", _percent(row["fall_p"]), class_="num"),
        tag("td", format_percent_points(number(row["expected_win_pct_lost"]) or 0.0), class_="num"),
    )


# The columns of the trickiest positions' table.
TRICKIEST_HEADS: Final = (
    "#",
    "position",
    "best reply",
    "humans fell with",
    "rating, clock",
    "opening and a game",
    "fell",
    "observed (95 % interval)",
    "predicted fall_p",
    "expected loss of win chance",
)


def trickiest_table(result: QueryResult) -> Html:
    rows = records(result)[:TRICKIEST_SHOWN]
    if not rows:
        return tag("p", "No position where a human fell by the estimate's rule.", class_="note")
    head = tag("tr", [tag("th", name) for name in TRICKIEST_HEADS])
    body = [_trickiest_row(index, row) for index, row in enumerate(rows, start=1)]
    return tag("div", tag("table", tag("thead", head), tag("tbody", body), class_="trickiest"), class_="table-wrap")


def falls_section(saved: SavedResults) -> Html:
    """The section, or one line saying the dataset has no fall estimates."""
    heading = tag("h2", "Fall probability against real falls")
    calibration = saved.results.get("calibration")
    if calibration is None:
        note = (
            "No fall probabilities in this dataset: it was mined without the practical judge or without human "
            "evidence (a human-move model or a corpus)."
        )
        return tag("section", heading, tag("p", note, class_="note"), id="falls")
    drawer = plot_calibration(calibration)
    if isinstance(drawer, str):
        figure = tag(
            "p", tag("strong", "Reliability"), f": not drawn, {drawer}. ", tag("code", "calibration"), class_="note"
        )
    else:
        width, height = (round(side * PLOT_DPI) for side in PLOT_INCHES)
        caption = tag(
            "figcaption",
            tag("strong", "Reliability"),
            " Each point is a tenth of fall_p: its mean prediction "
            "against how often humans fell there, with a Wilson 95 % interval; n is the occurrences. ",
            tag("code", "calibration"),
        )
        figure = tag(
            "figure",
            tag("img", src=png_data_uri(drawer), alt="Reliability of fall_p", width=width, height=height),
            caption,
            class_="plot",
            data_query="calibration",
        )
    totals = [row for row in records(calibration) if row["fall_p_bin"] == "all"]
    columns = list(TOTAL_COLUMNS)
    summary = QueryResult(columns, [tuple(row[column] for column in columns) for row in totals])
    every = tag(
        "details",
        tag("summary", "Every row of ", tag("code", "calibration"), " (by tenth of fall_p)"),
        table(calibration),
    )
    trickiest = saved.get("trickiest-positions")
    return tag(
        "section",
        heading,
        tag("p", READING),
        figure,
        tag("h3", "By rating band and clock"),
        table(summary),
        every,
        tag("h3", "Where humans fell most"),
        tag(
            "p",
            "Positions by rating band and clock, ranked by the Wilson lower bound of how often humans fell there, "
            "then by the expected loss; groups of fewer than 3 occurrences come after the rest. Each board is seen "
            "from the responder's side: the ",
            tag("span", "green arrow", class_="best"),
            " is the best reply, the ",
            tag("span", "red arrow", class_="trap"),
            " the move humans fell with most. ",
            tag("code", "trickiest-positions"),
        ),
        trickiest_table(trickiest),
        id="falls",
    )
