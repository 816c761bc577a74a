"""The repertoire explorer in a real headless Chromium (Playwright, Debian's /usr/bin/chromium, as
tests/outputs/test_puzzles_book.py drives it): a reader clicks through three plies of a real
repertoire (Stockfish, the bundled human-move model) by the move table and by the board, and every
figure shown is the Parquet row's; the page has no network access and one script."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess
import pyarrow.parquet as pq
import pytest

from pipeline.engines.options import EngineOptions
from pipeline.judging import HumanEvidence
from pipeline.outputs.repertoire.write import HTML_FILE, write_repertoire
from pipeline.repertoire.driver import WorkerSpec, build_repertoire
from pipeline.repertoire.records import NODES_FILE, Labels
from pipeline.repertoire.settings import RepertoireSettings, parse_start
from search.values import format_pawns
from tests.conftest import CHROMIUM, STOCKFISH, needs_chromium, needs_stockfish, require_playwright
from tests.reading import PERCENT, shows_percent

pytestmark = [needs_chromium, needs_stockfish]
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def repertoire(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """Black against 1500 after 1.e4, three plies deep (Stockfish at 20,000 nodes a line)."""
    settings = RepertoireSettings(color=chess.BLACK, rating=1500, plies=3, floor=0.2, width=1)
    spec = WorkerSpec(
        str(STOCKFISH), EngineOptions(nodes=20_000), settings, parse_start(None, "e4"), HumanEvidence(model="bundled")
    )
    growth, stats = build_repertoire(spec, 0)
    out = tmp_path_factory.mktemp("explorer")
    write_repertoire(growth, stats, Labels("stockfish", HumanEvidence("default")), out)
    return out, pq.read_table(out / NODES_FILE).to_pylist()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_playwright()
    from playwright import sync_api

    profile = tmp_path_factory.mktemp("profile")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), args=ARGS, headless=True, offline=True
        )
        try:
            yield context
        finally:
            context.close()


def shown_rows(page: Any, moves_expected: bool) -> dict[str, dict[str, str]]:
    """The move table as shown: per move (SAN), each column's text."""
    found = {}
    if moves_expected:  # the page's script draws the table after load: wait for its first move
        page.locator("table.moves tbody tr td.move button").first.wait_for()
    for tr in page.locator("table.moves tbody tr").all():
        cells = {cell.get_attribute("class"): cell.inner_text().strip() for cell in tr.locator("td").all()}
        found[cells.pop("move")] = cells
    return found


def descendants(rows: list[dict[str, Any]], node_id: int) -> list[dict[str, Any]]:
    """Every row below the node (the test's own walk of the parent links)."""
    found, frontier = [], {node_id}
    while frontier:
        below = [r for r in rows if r["parent_id"] in frontier]
        found += below
        frontier = {r["node_id"] for r in below}
    return found


def check_table(page: Any, rows: list[dict[str, Any]], node_id: int) -> None:
    """Every child of the node is shown with the row's figures, as the rows say them."""
    children = [r for r in rows if r["parent_id"] == node_id]
    shown = shown_rows(page, bool(children))
    assert sorted(shown) == sorted(r["move_san"] for r in children)
    for row in children:
        cells = shown[row["move_san"]]
        # Scores, their gains and probabilities in percent (a score's points are Win%'s).
        assert shows_percent(cells["expected"], row["expected"]), (cells, row["expected"])
        assert shows_percent(cells["gain"], row["move_gain"]) and cells["gain"][0] in "+-", (cells, row["move_gain"])
        assert cells["value"] == format_pawns(row["value_cp"])
        # How far each move was grown, so that a deep estimate and a one-reply one are told apart.
        below = descendants(rows, row["node_id"])
        if row["status"] == "width":
            assert cells["grown"] == "one reply (estimate)", cells
        elif below:
            plies = max(r["depth"] for r in below) - row["depth"]
            unit = "ply" if plies == 1 else "plies"
            assert cells["grown"] == f"{len(below):,} nodes, {plies} {unit}", (cells, len(below), plies)
        else:
            assert cells["grown"].startswith("leaf"), cells
        if row["mover"] == "opponent":
            assert shows_percent(cells["p"], row["probability"]), (cells, row["probability"])
        elif row["trap_probability"]:
            assert shows_percent(cells["works"], row["trap_probability"]), (cells, row["trap_probability"])
            assert cells["traps"] == str(row["traps"])


def test_a_reader_clicks_three_plies_and_sees_the_rows_figures(browser: Any, repertoire: tuple[Path, list]) -> None:
    out, rows = repertoire
    page = browser.new_page()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto((out / HTML_FILE).as_uri())
    node = rows[0]
    check_table(page, rows, node["node_id"])
    assert page.locator(".status").inner_text().startswith("Black to move. Expected score")
    for ply in range(3):
        children = [r for r in rows if r["parent_id"] == node["node_id"]]
        if not children:
            break
        # The recommended move (or the likeliest reply); the second ply by the board: piece, then square.
        chosen = max(children, key=lambda r: (bool(r["recommended"]), r["probability"] or 0.0, r["expected"]))
        if ply == 1:
            page.locator(f'button[data-square="{chosen["move_uci"][:2]}"]').click()
            page.locator(f'button[data-square="{chosen["move_uci"][2:4]}"]').click()
        else:
            page.locator(f'table.moves button.go[data-node="{chosen["node_id"]}"]').click()
        node = chosen
        assert page.locator(".line button.step").count() == ply + 2
        status = page.locator(".status").inner_text()
        shown = re.search(rf"Expected score ({PERCENT})", status)
        assert shown and shows_percent(shown[1], node["expected"]), status
        check_table(page, rows, node["node_id"])
    assert node["depth"] >= 2
    # Back goes up a ply; Export shows the line from the start as PGN.
    page.locator("button.back").click()
    page.locator("button.export").click()
    exported = page.locator("textarea.pgn").input_value()
    assert exported.startswith("1. e4 ")
    assert page.locator("script").count() == 1
    assert errors == [] and all(url.startswith(("file:", "data:")) for url in requests), requests


def test_the_pieces_sit_on_the_boards_squares_and_clear_of_its_coordinates(
    browser: Any, repertoire: tuple[Path, list]
) -> None:
    """Issue 44: the explorer's file letters overlapped the pieces. The board under the square
    buttons was python-chess's, with a border: its squares lay 4 % inside the buttons. Now every
    button covers its own square of the drawn board, and each coordinate lies in one square's
    corner."""
    out, _ = repertoire
    page = browser.new_page()
    page.goto((out / HTML_FILE).as_uri())
    page.locator("table.moves tbody tr td.move button").first.wait_for()
    board = page.locator(".stage svg.board").bounding_box()
    assert board is not None
    side = board["width"] / 8
    for name in ("a1", "h8", "e4"):
        square = chess.parse_square(name)
        column, row = 7 - chess.square_file(square), chess.square_rank(square)  # Black below
        box = page.locator(f'button[data-square="{name}"]').bounding_box()
        assert box is not None
        assert abs(box["x"] - (board["x"] + column * side)) < 1 and abs(box["y"] - (board["y"] + row * side)) < 1
        assert abs(box["width"] - side) < 1 and abs(box["height"] - side) < 1
    # The coordinates are drawn through a <use> of the page's shared shapes: the board shows the
    # ones of its orientation, in glyphs a small part of a square.
    assert page.locator('.stage svg.board use[href="#cb"]').count() == 1
    letters = page.locator("svg.defs #cb text").all()
    assert len(letters) == 16
    size = page.evaluate("() => getComputedStyle(document.querySelector('svg.defs #cb')).fontSize")
    assert 0 < float(size.removesuffix("px")) < 1 / 3, size  # a square is 1 (the board's viewBox is 8)
