"""The report's sections as HTML (built with `pipeline.outputs.html`, which escapes every plain
`str`): the summary, the judges side by side, the plots, the players, every saved query as a
table, the errors and the manifest. The trap positions' boards are `pipeline.outputs.report.boards`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Final

import chess

from pipeline.common.sanitize import safe_url
from pipeline.common.words import quantity
from pipeline.dataset.objects import Where
from pipeline.dataset.queries import QueryResult
from pipeline.engines.backends import describe_engine
from pipeline.outputs.html import Content, Html, join, tag, text
from pipeline.outputs.report.data import ErrorRows, SavedResults, number, records
from pipeline.outputs.report.plots import PLOT_DPI, PLOT_INCHES, PLOTS, png_data_uri
from search.values import format_percent, format_percent_points

# Saved queries with a section of their own; every other saved query is a table under "Saved queries".
OWN_SECTION: Final = frozenset(
    {"top-trap-positions", "top-players", "judge-comparison", "calibration", "trickiest-positions"}
)
# Columns that hold a link to a game (the views' `game_link`), shown as one.
LINK_COLUMNS: Final = frozenset({"link", "example_game"})
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
        "fall_p",
        "ece",
    }
)


# Columns that hold a loss of win chances in points of Win% (schemas/views.sql's `win_pct_lost`).
WIN_LOSS_SUFFIX: Final = "win_pct_lost"


# Columns that hold a FEN: shown as a short link to the position on Lichess's analysis board, the
# FEN in its title (sixty characters in a column squeezed the coach's table to 28,000 px).
FEN_COLUMNS: Final = frozenset({"fen", "node_fen"})
# Column suffixes for machines, left out of the tables.
MACHINE_SUFFIXES: Final = ("_key", "_uci")
ANALYSIS_URL: Final = "https://lichess.org/analysis/standard/"


def cell(column: str, value: Any) -> Html:
    """One cell as a person reads it (the views and saved queries name moves in SAN already)."""
    if value is None:
        return Html("")
    if isinstance(value, bool):
        return text("yes" if value else "no")
    if isinstance(value, float) and column in RATE_COLUMNS:
        return text(format_percent(value))
    if isinstance(value, float) and column.endswith(WIN_LOSS_SUFFIX):
        return text(format_percent_points(value))
    if isinstance(value, float):
        return text(f"{value:.4g}")
    if column in FEN_COLUMNS:
        return fen_link(str(value))
    if column in LINK_COLUMNS and safe_url(str(value)):
        return tag("a", "game", href=safe_url(str(value)), rel="noopener noreferrer nofollow")
    if isinstance(value, list | tuple):
        return text(" ".join(str(item) for item in value))
    return text(value)


def fen_link(fen: str) -> Html:
    """A position as a short link: "13... board" (the move number and side to move), opening it on
    Lichess's analysis board; the FEN is the link's title. An unreadable FEN stays text."""
    try:
        board = chess.Board(fen)
    except ValueError:
        return tag("code", fen)
    label = f"{board.fullmove_number}{'.' if board.turn == chess.WHITE else '...'} board"
    href = ANALYSIS_URL + board.fen().replace(" ", "_")
    return tag("a", label, href=href, title=board.fen(), rel="noopener noreferrer nofollow")


def heading(column: str) -> Html:
    """A column's name with a break opportunity after each underscore, so a table of many long
    names wraps its headings rather than scroll sideways."""
    return join(column.split("_"), Html("_<wbr />"))


def table(result: QueryResult, *, empty: str = "No rows.") -> Html:
    """A query's rows as a person reads them (`cell`); what is there for machines is left out (the
    keys, `*_key`: 64-bit hashes; the moves in UCI, `*_uci`, beside their SAN), and a column's
    cells carry its name as a class (`col-opening`) for the page's widths."""
    if not result.rows:
        return tag("p", empty, class_="note")
    shown = [column for column in result.columns if not column.endswith(MACHINE_SUFFIXES)]
    head = tag("tr", [tag("th", heading(column)) for column in shown])
    body = [tag("tr", _row_cells(result.columns, row, shown)) for row in result.rows]
    return tag("div", tag("table", tag("thead", head), tag("tbody", body)), class_="table-wrap")


def _row_cells(columns: list[str], row: tuple[Any, ...], shown: list[str]) -> list[Html]:
    values = dict(zip(columns, row, strict=True))
    return [
        tag(
            "td",
            cell(column, values[column]),
            class_=("num " if _isnumber(values[column]) else "") + f"col-{column.replace('_', '-')}",
        )
        for column in shown
    ]


def _isnumber(value: Any) -> bool:
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


def summary_section(dataset: Where, manifest: dict[str, Any] | None, lift: QueryResult) -> Html:
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
            ("engine", describe_engine(engine) if engine else "?"),
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
        rate, low, high = (format_percent(number(row[key]) or 0) for key in ("fall_rate", "wilson_low", "wilson_high"))
        items.append(
            (
                "trap nodes",
                f"{row['trap_nodes']:,} positions had a trap candidate; the human fell {row['fell']:,} times "
                f"({rate}, 95 % interval {low} to {high})",
            )
        )
    else:
        items.append(("trap nodes", "none"))
    return tag("section", tag("h2", "Summary"), note, facts(items), id="summary")


def plots_section(results: dict[str, QueryResult]) -> Html:
    """Each plot with data; for one without, a line saying why it is not drawn."""
    figures, missing = [], []
    for name, title, reading, plot in PLOTS:
        result = results.get(name)
        if result is None:
            continue
        drawer = plot(result)
        if isinstance(drawer, str):
            missing.append(tag("p", tag("strong", title), f": not drawn, {drawer}. ", tag("code", name), class_="note"))
            continue
        width, height = (round(side * PLOT_DPI) for side in PLOT_INCHES)
        caption = tag("figcaption", tag("strong", title), " ", reading, " ", tag("code", name))
        figures.append(
            tag(
                "figure",
                tag("img", src=png_data_uri(drawer), alt=title, width=width, height=height),
                caption,
                class_="plot",
                data_query=name,
            )
        )
    return tag("section", tag("h2", "Plots"), tag("div", figures, class_="plots"), *missing, id="plots")


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


def tables_section(saved: SavedResults) -> Html:
    parts = []
    for name, description in saved.descriptions.items():
        if name in OWN_SECTION:
            continue
        parts.append(tag("h3", tag("code", name)))
        parts.append(tag("p", description))
        result = saved.results.get(name)
        parts.append(
            table(result) if result is not None else tag("p", saved.unmet.get(name, "Not run."), class_="note")
        )
    return tag("section", tag("h2", "Saved queries"), join(parts), id="tables")


def errors_section(errors: ErrorRows) -> Html:
    counts = errors.counts
    if not counts:
        return tag("section", tag("h2", "Errors"), tag("p", "No errors.", class_="note"), id="errors")
    shown = errors.first
    total = sum(count for _, count in counts)
    summary = ", ".join(f"{count:,} at {stage}" for stage, count in counts)
    note = f"The first {len(shown.rows)} of {total:,}:" if total > len(shown.rows) else "All of them:"
    return tag(
        "section",
        tag("h2", "Errors"),
        tag("p", f"{quantity(total, 'error')} ({summary}). {note}"),
        table(shown),
        id="errors",
    )


def manifest_section(manifest: dict[str, Any] | None) -> Html:
    body = (
        tag("details", tag("summary", "manifest.json"), tag("pre", json.dumps(manifest, indent=2, sort_keys=True)))
        if manifest is not None
        else tag("p", "No manifest.json.", class_="note")
    )
    return tag("section", tag("h2", "Manifest"), body, id="manifest")
