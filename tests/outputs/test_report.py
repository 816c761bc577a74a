"""`diffimax report`: a self-contained HTML page over a dataset mined from real games, hostile PGN
headers kept inert, and the page rendered by a real headless browser (Debian's chromium)."""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import pytest

from pipeline.common.sanitize import terminal_visible
from pipeline.dataset.integrity import DatasetError, IncompleteDatasetError
from pipeline.dataset.queries import (
    CSV_KEEPS,
    QueryResult,
    RequirementError,
    render,
    run_query,
    run_saved,
    saved_queries,
)
from pipeline.ingest.headers import GameFilter
from pipeline.outputs.html import tag, text
from pipeline.outputs.report import REPORT_NAME, ReportError, write_report
from pipeline.outputs.report.data import BOARDS_SHOWN, SavedResults
from pipeline.outputs.report.falls import TRICKIEST_SHOWN, falls_section
from pipeline.outputs.report.plots import (
    COUNT_LABEL,
    PLOT_DPI,
    PLOT_INCHES,
    draw_png,
    plot_calibration,
    plot_clock,
    plot_dip,
    plot_lift,
    plot_rating,
)
from pipeline.outputs.report.sections import plots_section
from search.values import format_percent
from tests.conftest import CHROMIUM, GAMES, needs_chromium, require_playwright
from tests.mining_helpers import EVERY_JUDGE, mine
from tests.reading import (
    MACHINE_LOSS_COLUMNS,
    coordinate_moves,
    coordinate_moves_in_words,
    mate_markers,
    percents_without_space,
    two_scales,
    two_scales_in_words,
)

SAMPLE = GAMES / "lichess_100.pgn"  # no clock comments
CLOCKS = GAMES / "lichess_eval_clk_10024.pgn.zst"  # %clk and %eval on every move
SECTIONS = ["summary", "judges", "plots", "falls", "trap-positions", "players", "tables", "errors", "manifest"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DATA_PNG = "data:image/png;base64,"
# Elements html.parser sees without an end tag.
VOID = {"meta", "img", "br", "hr", "col", "link", "input", "source", "wbr"}

# Header values of the hostile games (what the dataset holds after PGN unescaping).
SCRIPT = "<script>alert(1)</script>"
FORMULA = "\",\"=cmd|' /C calc'!A0"  # breaks out of a naively quoted CSV cell into a formula
IMG = "<img src=x onerror=alert(2)>"
BACKSLASH_N = "line1\\nline2"  # the two characters backslash and n, as PGN files carry them
CARRIAGE = "Carriage\rReturn"  # a bare CR inside a header line: the reader keeps it
ENTITIES = "&amp; &lt;b&gt;"  # must show literally, not as `& <b>`
BELL = "Bell\x07Ringer"  # a control character: not valid XML, shown as U+FFFD
GAME_ID = '"><svg onload=alert(4)>'


@dataclass
class Report:
    dataset: Path
    path: Path
    html: str
    manifest: dict[str, Any]


@pytest.fixture(scope="module")
def sample(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Report:
    """The 100 sample games (no clocks) then 30 games with clocks, plies 8-14, depth 1."""
    root = tmp_path_factory.mktemp("report")
    manifest = mine(
        [str(SAMPLE), str(CLOCKS)],
        root / "run",
        workers=2,
        max_games=130,
        game_filter=GameFilter(ply_from=8, ply_to=14),
        **EVERY_JUDGE,
    )
    path = write_report(root / "run", root / "report")
    return Report(root / "run", path, path.read_text(encoding="utf-8"), manifest)


def _pgn_value(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.fixture(scope="module")
def hostile(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Report:
    """Three legal games (the same moves, so their positions repeat) whose headers are hostile,
    and a fourth whose Event value spans two physical lines (a parse error quoting it)."""
    root = tmp_path_factory.mktemp("hostile")
    with SAMPLE.open(encoding="utf-8") as handle:
        game = chess.pgn.read_game(handle)
    assert game is not None
    moves = game.accept(chess.pgn.StringExporter(headers=False, comments=False, variations=False))
    headers = [
        {"Event": SCRIPT, "White": SCRIPT, "Black": FORMULA, "WhiteElo": "1500", "BlackElo": "1600"},
        {"Event": FORMULA, "White": BACKSLASH_N, "Black": IMG, "WhiteElo": "1700", "BlackElo": "1650"},
        {"Event": ENTITIES, "White": ENTITIES, "Black": CARRIAGE + " " + BELL, "GameId": GAME_ID},
    ]
    pgn = "".join(
        "".join(f"[{name} {_pgn_value(value)}]\n" for name, value in tags.items()) + "\n" + moves + "\n\n"
        for tags in headers
    )
    pgn += '[Event "<script>alert(3)\n</script>"]\n[White "w"]\n[Black "b"]\n\n' + moves + "\n"
    source = root / "hostile.pgn"
    source.write_text(pgn, encoding="utf-8", newline="")
    # plies 4-24 hold positions where the practical judge's candidate was played (boards with events)
    manifest = mine(
        [str(source)], root / "run", workers=1, game_filter=GameFilter(ply_from=4, ply_to=24), **EVERY_JUDGE
    )
    assert (manifest["games_written"], manifest["games_error"]) == (3, 1)
    path = write_report(root / "run", root / "report")
    return Report(root / "run", path, path.read_text(encoding="utf-8"), manifest)


def board_fens(markup: str) -> list[str]:
    """The FENs under the boards, in page order."""
    return [html.unescape(fen) for fen in re.findall(r'<dt>position</dt><dd><a href="[^"]*" title="([^"]*)"', markup)]


class Page(HTMLParser):
    """Start tags with their attributes, the text (entities decoded) and unbalanced end tags."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.unbalanced: list[str] = []
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.unbalanced.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def find(self, name: str) -> list[dict[str, str | None]]:
        return [attrs for tag, attrs in self.tags if tag == name]

    def all_text(self) -> str:
        return "".join(self.text)


def assert_inert_and_well_formed(markup: str) -> Page:
    """No script, no event handler, nothing fetched; balanced tags; valid XML too."""
    page = Page(markup)
    assert not page.unbalanced and not page.stack, (page.unbalanced, page.stack)
    assert "<script" not in markup.lower()
    names = {element for element, _ in page.tags}
    assert not names & {"script", "iframe", "object", "embed", "link", "base", "form"}
    for element, attrs in page.tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (element, name, value)
            if name == "src":
                assert value is not None and value.startswith(DATA_PNG), (element, value)
            if name == "href" and element == "a" and value is not None and value.startswith("https://"):
                # A game's link: followed when the reader clicks it, never fetched by the page.
                assert attrs.get("rel") == "noopener noreferrer nofollow", (element, attrs)
            elif name in ("href", "xlink:href"):
                assert value is not None and value.startswith("#"), (element, value)
    assert "url(" not in "".join(page.text).replace("url(#", "")  # CSS fetches nothing
    ElementTree.fromstring(markup.removeprefix("<!DOCTYPE html>\n"))  # raises on anything malformed
    return page


# ---------------------------------------------------------------------------------------------
# Without a dataset


def test_text_escapes_markup_quotes_and_unprintable_characters() -> None:
    assert text(SCRIPT) == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert text(FORMULA) == "&quot;,&quot;=cmd|&#x27; /C calc&#x27;!A0"
    assert text(ENTITIES) == "&amp;amp; &amp;lt;b&amp;gt;"
    assert text(BELL) == "Bell\ufffdRinger"
    assert text(CARRIAGE) == CARRIAGE and text(BACKSLASH_N) == BACKSLASH_N


def test_tag_escapes_text_children_and_attributes_but_not_markup() -> None:
    inner = tag("b", IMG)
    assert tag("p", SCRIPT, inner, title=FORMULA, class_="x", hidden=True, id=None) == (
        '<p title="&quot;,&quot;=cmd|&#x27; /C calc&#x27;!A0" class="x" hidden="hidden">'
        "&lt;script&gt;alert(1)&lt;/script&gt;<b>&lt;img src=x onerror=alert(2)&gt;</b></p>"
    )
    assert (
        tag("img", src="data:image/png;base64,AA==", alt="a<b")
        == '<img src="data:image/png;base64,AA==" alt="a&lt;b" />'
    )
    with pytest.raises(ValueError, match="void element 'br' takes no content"):
        tag("br", "x")


def test_write_report_of_a_directory_without_a_dataset(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no diffimax dataset in"):
        write_report(tmp_path, tmp_path / "report")
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize(
    ("drawer", "columns", "reason"),
    [
        (plot_rating, ["rating_band", "trap_nodes", "fell", "wilson_low", "fall_rate", "wilson_high"], "rated"),
        (plot_clock, ["clock", "trap_nodes", "fell", "wilson_low", "fall_rate", "wilson_high"], "clock times"),
        (
            plot_dip,
            ["dip_from", "dip_to", "candidates", "played", "wilson_low", "play_rate", "wilson_high"],
            "trap candidates",
        ),
        (
            plot_lift,
            [
                "trap_nodes",
                "fell",
                "expected_by_chance",
                "wilson_low",
                "fall_rate",
                "wilson_high",
                "chance_rate",
                "lift",
            ],
            "trap nodes",
        ),
    ],
)
def test_a_plot_with_no_data_is_not_drawn_and_says_why(drawer: Any, columns: list[str], reason: str) -> None:
    rows: list[tuple[Any, ...]] = []
    if drawer is plot_lift:  # the lift query always returns its one row, empty when nothing matched
        rows = [(0, None, None, None, None, None, None, None)]
    why = drawer(QueryResult(columns, rows))
    assert isinstance(why, str) and reason in why
    page = plots_section({"fall-rate-by-clock": QueryResult(columns, rows)} if drawer is plot_clock else {})
    if drawer is plot_clock:
        words = Page(str(page)).all_text()
        assert "Fall rate by clock: not drawn, the games carry no clock times" in words and "<img" not in page


def test_without_fall_estimates_the_fall_section_is_one_line() -> None:
    columns = "grouping group_value fall_p_bin occurrences fell fall_p wilson_low fall_rate wilson_high ece brier"
    why = plot_calibration(QueryResult([*columns.split(), "played_unvalued"], []))
    assert isinstance(why, str) and "fall estimate" in why
    unmet = SavedResults({}, {"calibration": "saved query 'calibration' needs fall probabilities"}, {})
    page = Page(str(falls_section(unmet)))
    assert [attrs["id"] for attrs in page.find("section")] == ["falls"]
    assert not page.find("img") and not page.find("table") and len(page.find("p")) == 1
    assert "No fall probabilities in this dataset" in page.all_text()


def test_count_labels_that_would_overlap_are_left_out() -> None:
    # 40 dip buckets of 0.25 pawns, 16 px apart on a 640 px plot: "n=123" labels are wider than that.
    columns = ["dip_from", "dip_to", "candidates", "played", "wilson_low", "play_rate", "wilson_high"]
    rows = [(b * 0.25, b * 0.25 + 0.25, 100 + b, 10, 0.05, 0.1, 0.2) for b in range(40)]
    drawer = plot_dip(QueryResult(columns, rows))
    assert not isinstance(drawer, str)
    png, figure = draw_png(drawer)
    assert png.startswith(PNG_MAGIC)
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    labels = [text for text in figure.axes[0].texts if text.get_gid() == COUNT_LABEL]
    shown = [text.get_window_extent(renderer) for text in labels if text.get_visible()]
    assert len(labels) == 40 and 5 <= len(shown) < 40
    for index, box in enumerate(shown):
        assert not any(box.overlaps(other) for other in shown[index + 1 :])


# ---------------------------------------------------------------------------------------------
# A dataset mined from real games


def test_report_has_every_section_plot_and_board(sample: Report) -> None:
    page = assert_inert_and_well_formed(sample.html)
    assert sample.path == sample.dataset.parent / "report" / REPORT_NAME
    assert sample.html.startswith('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8" />')
    assert [attrs["id"] for attrs in page.find("section")] == SECTIONS
    images = page.find("img")
    assert [attrs["alt"] for attrs in images] == [
        "Fall rate by rating",
        "Fall rate by clock",
        "Play rate by dip",
        "Lift: observed against chance",
        "Reliability of fall_p",
    ]
    for attrs in images:
        data = base64.b64decode(str(attrs["src"]).removeprefix(DATA_PNG), validate=True)
        assert data.startswith(PNG_MAGIC)
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")  # IHDR
        assert (width, height) == tuple(round(side * PLOT_DPI) for side in PLOT_INCHES)
    tops = run_saved(sample.dataset, "top-trap-positions")
    boards = [attrs for attrs in page.find("figure") if attrs.get("class") == "board"]
    assert len(boards) == min(BOARDS_SHOWN, len(tops.rows)) > 0
    trickiest = run_saved(sample.dataset, "trickiest-positions")
    minis = [attrs for attrs in page.find("figure") if attrs.get("class") == "mini-board"]
    assert len(minis) == min(TRICKIEST_SHOWN, len(trickiest.rows)) > 0
    assert len(page.find("svg")) == len(boards) + len(minis)
    ids = [attrs["id"] for tag, attrs in page.tags if "id" in attrs]
    assert len(ids) == len(set(ids))  # each board's piece definitions are its own
    words = page.all_text()
    assert "not drawn" not in words  # the clock games give the clock plot its points
    m = sample.manifest
    assert f"{m['games_read']:,} read = {m['games_written']:,} mined + {m['games_filtered']:,} filtered" in words
    assert f"{m['positions_analysed']:,} analysed, {m['positions_reused']:,} reused" in words
    assert "No errors." in words
    # The boards show trap nodes of the dataset (which FEN of a transposition is shown may vary).
    trap_nodes = run_query(sample.dataset, "select distinct fen from outcomes where trap_node").rows
    epds = {" ".join(fen.split()[:4]) for (fen,) in trap_nodes}
    shown = board_fens(sample.html)
    assert len(shown) == len(boards) and all(" ".join(fen.split()[:4]) in epds for fen in shown)


def test_boards_draw_the_best_reply_and_the_trap_candidate_from_the_responders_side(sample: Report) -> None:
    board = chess.Board(board_fens(sample.html)[0])
    svg = re.search(r'<figure class="board"><svg.*?</svg>', sample.html, re.DOTALL)  # the first trap position's
    assert svg is not None
    drawing = svg.group()
    assert drawing.count('class="arrow"') == 4  # a line and a head for each of the two arrows
    assert "#15781B" in drawing and "#882020" in drawing  # chess.svg's green and red
    # Seen from the responder's side: the responder's king is in the lower half of the board.
    king = "white-king" if board.turn == chess.WHITE else "black-king"
    placed = re.search(rf'<use href="#b1-{king}"[^>]*transform="translate\((\d+), (\d+)\)"', drawing)
    assert placed is not None and int(placed.group(2)) > 195  # the board is 390 units high
    assert f"{'White' if board.turn else 'Black'} (the responder)" in Page(sample.html).all_text()


def falls_markup(markup: str) -> str:
    """The fall probability section of a page."""
    start = markup.index('<section id="falls">')
    return markup[start : markup.index("</section>", start)]


def cell_words(cell: str) -> list[str]:
    """The words of a table cell's markup."""
    return html.unescape(re.sub(r"<[^>]+>", " ", cell)).split()


def reliability_drawn(dataset: Path) -> bool:
    return not isinstance(plot_calibration(run_saved(dataset, "calibration")), str)


def test_the_fall_section_sets_predictions_beside_real_falls_readably(sample: Report) -> None:
    """The reliability plot (ECE in its title), the totals of calibration, and the trickiest
    positions as boards with their moves in SAN and their rates as percentages, no FEN as text."""
    section = falls_markup(sample.html)
    page = Page(section)
    (image,) = page.find("img")
    assert image["alt"] == "Reliability of fall_p" and str(image["src"]).startswith(DATA_PNG)
    words = page.all_text()
    calibration = run_saved(sample.dataset, "calibration")
    (overall,) = [row for row in calibration.rows if row[:3] == ("overall", "all", "all")]
    assert format_percent(overall[7]) in words  # the observed fall rate of every occurrence
    result = run_saved(sample.dataset, "trickiest-positions")
    trickiest = [dict(zip(result.columns, row, strict=True)) for row in result.rows][:TRICKIEST_SHOWN]
    shown = re.findall(r'<table class="trickiest">.*?</table>', section, re.DOTALL)
    assert len(shown) == 1
    rows = re.findall(r"<tr>(.*?)</tr>", re.sub(r"<svg.*?</svg>", "", shown[0], flags=re.DOTALL), re.DOTALL)[1:]
    assert len(rows) == len(trickiest) > 0
    for markup, row in zip(rows, trickiest, strict=True):
        board = chess.Board(row["fen"])
        cells = [cell_words(cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", markup, re.DOTALL)]
        best, fell_with = cells[2][0], cells[3][0]
        assert board.parse_san(best).uci() == row["best_move_uci"] and best == row["best_move"]
        assert board.parse_san(fell_with).uci() == row["fell_with_uci"] and fell_with == row["fell_with"]
        assert f"{row['fell']} of {row['occurrences']}" in " ".join(cells[6])
        # The rates as `format_percent` writes them ("33 %"), the fall rate with its interval after it.
        assert " ".join(cells[7][:2]) == format_percent(row["fall_rate"])
        assert " ".join(cells[8][:2]) == format_percent(row["fall_p"])
        # The expected loss in points of Win% (the one scale of a loss), never on the rows' 0..2.
        loss = " ".join(cells[9])
        assert loss.endswith(" %") and float(loss.removesuffix(" %")) == pytest.approx(
            row["expected_win_pct_lost"], abs=0.51
        )
        assert row["fen"] not in words and row["fen"].split()[0] not in section


VIEWS = ("games", "positions", "responses", "traps", "errors", "root_candidates", "judge_outcomes", "outcomes")


def test_every_view_query_and_the_page_read_a_loss_on_one_scale_no_mate_marker_and_moves_in_san(sample: Report) -> None:
    """Issue 44, item 6 (`tests.reading`): what a person reads of a dataset, the views, every saved
    query and the report, shows a loss of win chances in points of Win% only, a mate as "#N" and
    moves in SAN (the UCI in `*_uci` columns beside)."""
    found: dict[str, list[str]] = {}
    for view in VIEWS:
        result = run_query(sample.dataset, f"select * from {view}")
        found[view] = two_scales(result.columns, result.rows) + coordinate_moves(result.columns, result.rows)
        # Values are centipawns for machines (a mate is MATE - n); the *_pawns columns are for people.
        shown = [i for i, name in enumerate(result.columns) if name.endswith("_pawns")]
        found[view] += [m for row in result.rows for i in shown for m in mate_markers(str(row[i] or ""))]
    for name in saved_queries():
        try:
            result = run_saved(sample.dataset, name)
        except RequirementError:
            continue
        found[name] = two_scales(result.columns, result.rows) + coordinate_moves(result.columns, result.rows)
        found[name] += [m for row in result.rows for value in row for m in mate_markers(str(value))]
    page_markup = re.sub(r'<section id="manifest">.*?</section>', "", sample.html, flags=re.DOTALL)  # a JSON dump
    page = Page(page_markup)
    words = page.all_text()
    found["report"] = two_scales_in_words(words) + mate_markers(words) + coordinate_moves_in_words(words)
    # The page's own style sheet writes CSS ("width: 100%"), which nobody reads as a figure.
    unstyled = re.sub(r"<style.*?</style>", "", page_markup, flags=re.DOTALL)
    found["report"] += percents_without_space(Page(unstyled).all_text())
    heads = [head.replace("<wbr />", "") for head in re.findall(r"<th>(.*?)</th>", sample.html)]
    found["report"] += [head for head in heads if head in MACHINE_LOSS_COLUMNS]
    assert {where: what for where, what in found.items() if what} == {}
    # The dataset reads losses at all: the practical judge's and the fall estimate's columns.
    losses = run_query(sample.dataset, "select max(played_win_pct_lost), max(expected_win_pct_lost) from outcomes")
    assert all(value is not None and value > 0 for value in losses.rows[0])
    # ... and names moves, each SAN the move its UCI says at the row's position.
    named = run_query(sample.dataset, "select node_fen, move, move_uci, refutation, refutation_uci from traps")
    assert named.rows
    for fen, san, uci, refutation, refutation_uci in named.rows:
        board = chess.Board(fen)
        assert board.parse_san(san) == chess.Move.from_uci(uci)
        board.push_uci(uci)
        expected = []
        for step in refutation_uci:
            expected.append(board.san(chess.Move.from_uci(step)))
            board.push_uci(step)
        assert refutation.split() == expected


def test_report_of_a_dataset_with_a_broken_manifest(sample: Report, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(sample.dataset, copy)
    (copy / "manifest.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ReportError, match=r"unreadable manifest '.*manifest\.json'"):
        write_report(copy, tmp_path / "report")
    (copy / "manifest.json").unlink()  # a job that has not finished: read only on request (issue 18)
    with pytest.raises(IncompleteDatasetError, match="has not finished"):
        write_report(copy, tmp_path / "report")
    written = write_report(copy, tmp_path / "report", allow_partial=True)
    page = assert_inert_and_well_formed(written.read_text(encoding="utf-8"))
    assert "This dataset has no manifest.json" in page.all_text() and "partial dataset" in page.all_text()


def test_report_of_a_dataset_where_every_game_was_filtered_out(ray_session: None, tmp_path: Path) -> None:
    manifest = mine([str(SAMPLE)], tmp_path / "run", workers=1, game_filter=GameFilter(min_elo=3500))
    assert manifest["games_written"] == 0 and manifest["games_filtered"] == 100
    page = assert_inert_and_well_formed(write_report(tmp_path / "run", tmp_path / "report").read_text("utf-8"))
    words = page.all_text()
    assert words.count(": not drawn, ") == 4 and not page.find("img")
    assert "No trap nodes in this dataset." in words
    assert "No fall probabilities in this dataset" in words
    assert "100 read = 0 mined + 100 filtered + 0 with errors" in words
    assert not page.find("svg")


# ---------------------------------------------------------------------------------------------
# Strangers' headers


def test_hostile_headers_render_as_text(hostile: Report) -> None:
    page = assert_inert_and_well_formed(hostile.html)
    words = page.all_text()
    for value in (SCRIPT, FORMULA, IMG, BACKSLASH_N, ENTITIES, "Carriage", "Bell\ufffdRinger"):
        assert value in words, value
    assert GAME_ID not in words and "<svg onload" not in hostile.html  # games are named by players, not ids
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in hostile.html
    assert "&quot;,&quot;=cmd|&#x27; /C calc&#x27;!A0" in hostile.html
    assert "&amp;amp; &amp;lt;b&amp;gt;" in hostile.html
    assert "\x07" not in hostile.html
    # The game whose header spans two lines is an error, quoted as text.
    assert "unparseable header line '[Event \"<script>alert(3)'" in words
    assert "Fall rate by clock: not drawn, the games carry no clock times" in words
    # Every player is listed, and the events under the boards (the games share their positions).
    players = run_saved(hostile.dataset, "top-players")
    assert {row[0] for row in players.rows} == {SCRIPT, FORMULA, BACKSLASH_N, IMG, ENTITIES, CARRIAGE + " " + BELL}
    for white, black, event in ((SCRIPT, FORMULA, SCRIPT), (BACKSLASH_N, IMG, FORMULA)):
        assert f"{white} (" in words and f") - {black} (" in words and f"), {event}" in words


def _csv_round_trip(result: QueryResult) -> None:
    rows = list(csv.reader(io.StringIO(render(result, "csv"), newline="")))
    assert rows[0] == result.columns
    # Tab, LF and CR stay inside their quoted cell; other controls (BEL) are shown as `\x07`.
    assert [row[0] for row in rows[1:]] == [terminal_visible(row[0], keep=CSV_KEEPS) for row in result.rows]
    assert all(len(row) == len(result.columns) for row in rows)
    assert not [cell for row in rows for cell in row if cell[:1] in ("=", "+", "-", "@")]


def test_hostile_headers_stay_one_csv_cell(hostile: Report) -> None:
    """The players query as CSV and JSON: each name reads back as one cell, none a formula."""
    result = run_saved(hostile.dataset, "top-players")
    assert FORMULA in [row[0] for row in result.rows]
    _csv_round_trip(QueryResult(result.columns, [row for row in result.rows if "\r" not in row[0]]))
    assert [row["player"] for row in json.loads(render(result, "json"))] == [row[0] for row in result.rows]


def test_a_carriage_return_in_a_header_stays_inside_its_csv_cell(hostile: Report) -> None:
    result = run_saved(hostile.dataset, "top-players")
    assert CARRIAGE + " " + BELL in [row[0] for row in result.rows]
    _csv_round_trip(result)


# ---------------------------------------------------------------------------------------------
# A real browser


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    """Headless chromium with no network chatter and a throwaway profile."""
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


@needs_chromium
def test_chromium_renders_the_report(sample: Report, tmp_path: Path) -> None:
    import numpy as np
    from matplotlib.image import imread

    shot = tmp_path / "shot.png"
    result = chromium(f"--screenshot={shot}", "--window-size=1280,2000", sample.path.as_uri(), profile=tmp_path / "p")
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    assert shot.stat().st_size > 100_000
    pixels = (imread(str(shot))[..., :3] * 255).astype(np.uint8)
    assert pixels.shape == (2000, 1280, 3)
    colours, counts = np.unique(pixels.reshape(-1, 3), axis=0, return_counts=True)
    assert len(colours) > 1_000  # plots, boards and text, not a blank or error page
    assert counts.max() < 0.8 * pixels.shape[0] * pixels.shape[1]
    # The header bar is dark, the page below it light.
    assert pixels[20, 640].mean() < 60 and pixels[1000, 10].mean() > 200


@needs_chromium
def test_chromium_decodes_every_image_and_lays_out_every_board(sample: Report, tmp_path: Path) -> None:
    """A copy of the page with a probe script (and so without the page's no-script policy)."""
    probe = """<script>window.addEventListener("load", function () {
        var images = Array.prototype.slice.call(document.images);
        var decoded = images.filter(function (i) { return i.complete && i.naturalWidth > 0; });
        var boards = Array.prototype.slice.call(document.querySelectorAll("figure.board svg"));
        var drawn = boards.filter(function (s) { return s.getBoundingClientRect().width >= 200; });
        var sections = document.querySelectorAll("main > section").length;
        var minis = Array.prototype.slice.call(document.querySelectorAll("#falls figure.mini-board svg"));
        var small = minis.filter(function (s) { return s.getBoundingClientRect().width >= 100; });
        var falls = document.getElementById("falls").getBoundingClientRect().height;
        document.body.setAttribute("data-probe", [images.length, decoded.length, drawn.length, sections,
                                                   small.length, Math.round(falls)].join("/"));
    });</script>"""
    markup = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*/>', "", sample.html)
    page = tmp_path / "probe.html"
    page.write_text(markup.replace("</body>", probe + "</body>"), encoding="utf-8")
    result = chromium("--dump-dom", "--virtual-time-budget=10000", page.as_uri(), profile=tmp_path / "p")
    assert result.returncode == 0, result.stderr[-2000:]
    found = re.search(r'data-probe="(\d+)/(\d+)/(\d+)/(\d+)/(\d+)/(\d+)"', result.stdout)
    assert found is not None, result.stdout[-2000:]
    images, decoded, boards, sections, minis, falls = map(int, found.groups())
    tops = run_saved(sample.dataset, "top-trap-positions")
    trickiest = run_saved(sample.dataset, "trickiest-positions")
    assert (images, decoded, boards, sections) == (5, 5, min(BOARDS_SHOWN, len(tops.rows)), len(SECTIONS))
    # The fall section: its plot among the images, every small board laid out, the section as tall as they need.
    assert minis == min(TRICKIEST_SHOWN, len(trickiest.rows)) > 0
    assert falls > 360 + minis * 150


@needs_chromium
def test_the_tables_fit_the_page_and_read_in_san(sample: Report, tmp_path: Path) -> None:
    """Issue 44: a coach's 40-game report was 54,000 px tall at 1,400 px, 28,000 of them the
    practical-traps table, whose FEN column was squeezed to 2-3 characters a line; refutations
    printed as Python lists of coordinates; the judges' table scrolled sideways. Now no table
    scrolls sideways at 1,280 px, the page is under 15,000 px at 1,400 px, and the moves read in
    SAN, each FEN a short link."""
    require_playwright()
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"], headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(sample.path.as_uri())
            wide = page.evaluate(
                "[...document.querySelectorAll('.table-wrap')].filter(w => w.scrollWidth > w.clientWidth + 1).length"
            )
            page.set_viewport_size({"width": 1400, "height": 900})
            height = page.evaluate("document.documentElement.scrollHeight")
            refutations = page.locator("td.col-refutation").all_inner_texts()
            positions = page.locator("td.col-fen a, td.col-node-fen a").all()
        finally:
            browser.close()
    assert wide == 0 and height < 15_000, (wide, height)
    assert refutations and not [r for r in refutations if "[" in r or re.search(r"\b[a-h][1-8][a-h][1-8]\b", r)]
    assert positions
    practical = run_saved(sample.dataset, "practical-traps")
    first = dict(zip(practical.columns, practical.rows[0], strict=True))
    board = chess.Board(first["fen"])
    assert board.san(chess.Move.from_uci(first["move_uci"])) == first["move"]
    assert f">{first['move']}</td>" in sample.html


@needs_chromium
def test_chromium_keeps_hostile_headers_as_text(hostile: Report, tmp_path: Path) -> None:
    result = chromium("--dump-dom", "--virtual-time-budget=5000", hostile.path.as_uri(), profile=tmp_path / "p")
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert "<script" not in dom.lower() and "onerror=" not in dom.replace("onerror=alert(2)&gt;", "")
    page = Page(dom)
    # Four plots but the clock's (the hostile games carry no %clk comments), and the reliability plot.
    assert reliability_drawn(hostile.dataset)
    assert not page.find("script") and len(page.find("img")) == 4
    assert not [attrs for tag, attrs in page.tags if any(name.startswith("on") for name in attrs)]
    words = page.all_text()
    assert "not drawn, the games carry no clock times" in words
    for value in (SCRIPT, FORMULA, IMG, BACKSLASH_N, ENTITIES):
        assert value in words, value
    assert "<svg onload" not in dom  # the hostile GameId (the page names games by players and link, not id)
