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
from tests.reading import PERCENT, UCI_MOVE, percents_without_space, shows_percent

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


def grow(out: Path, settings: RepertoireSettings, moves: str) -> tuple[Path, list[dict[str, Any]]]:
    """A repertoire from `moves` (Stockfish at 20,000 nodes a line, the bundled human-move model),
    written to `out`, and its rows."""
    spec = WorkerSpec(
        str(STOCKFISH), EngineOptions(nodes=20_000), settings, parse_start(None, moves), HumanEvidence(model="bundled")
    )
    growth, stats = build_repertoire(spec, 0)
    write_repertoire(growth, stats, Labels("stockfish", HumanEvidence("default")), out)
    return out, pq.read_table(out / NODES_FILE).to_pylist()


@pytest.fixture(scope="module")
def repertoire(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """Black against 1500 after 1.e4, three plies deep."""
    settings = RepertoireSettings(color=chess.BLACK, rating=1500, plies=3, floor=0.2, width=1)
    return grow(tmp_path_factory.mktemp("explorer"), settings, "e4")


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


# The drill (issue 45, item 4): the student plays their side, the opponent's replies are drawn from
# the predicted distribution, a trap reply asks for its punishment, and mistakes are remembered.
BLACKBURNE = "e4 e5 Nf3 Nc6 Bc4 Nd4"  # the Blackburne Shilling: 4.Nxe5 Qg5 and 5.Nxf7 or 5.Nf3 are traps
# A probability as a bare fraction ("0.48"); a pawn amount ("0.50 pawns") is no probability.
RAW_PROBABILITY = re.compile(r"(?<![\d.])0\.\d+(?!\d| pawns?\b)")


@pytest.fixture(scope="module")
def trap_repertoire(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """Black against 1200 from the Blackburne Shilling's position, three plies deep: White's
    reply, Black's move, White's reply (a trap among them after 4.Nxe5 Qg5)."""
    settings = RepertoireSettings(color=chess.BLACK, rating=1200, plies=3, floor=0.2, width=1)
    return grow(tmp_path_factory.mktemp("drill"), settings, BLACKBURNE)


def drill_page(browser: Any, out: Path, seed: int, errors: list[str], *, clear: bool = False) -> Any:
    """The explorer opened in the drill with `?seed=` (a page of the one persistent context)."""
    page = browser.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    open_drill(page, out, seed, clear=clear)
    return page


def open_drill(page: Any, out: Path, seed: int, *, clear: bool = False) -> None:
    page.goto(f"{(out / HTML_FILE).as_uri()}?seed={seed}")
    if clear:
        page.evaluate("() => localStorage.clear()")
        page.reload()
    page.locator("button.mode-drill").click()
    page.locator(".drill[data-asking]").wait_for()


def asking(page: Any) -> tuple[int, str]:
    """Where the drill is (the node's id) and what it asks: move, punishment or next."""
    panel = page.locator(".drill")
    return int(panel.get_attribute("data-node")), panel.get_attribute("data-asking")


def answer(rows: dict[int, dict[str, Any]], node_id: int, what: str) -> str:
    """The right answer by the test's own reading of the rows: the recommended move, or the trap's
    punishment's first move (numbered SAN)."""
    if what == "punishment":
        return str(rows[node_id]["punishment_san"].split()[0])
    (move,) = [r for r in rows.values() if r["parent_id"] == node_id and r["recommended"]]
    return str(move["move_san"])


def play(page: Any, move: str) -> None:
    page.locator("input.drill-move").fill(move)
    page.locator("button.drill-play").click()


def bare(san: str) -> str:
    return re.sub(r"^\d+\.+", "", san)


def reads_for_people(text: str) -> None:
    """Text a 1200 student reads: no raw probability, no coordinate move, percents as "48 %"."""
    assert not RAW_PROBABILITY.search(text), text
    assert not UCI_MOVE.search(text), text
    assert not percents_without_space(text), text


def drill_storage(page: Any, rows: list[dict[str, Any]]) -> Any:
    """The drill's memory in localStorage, under the repertoire's key (its start, colour, rating)."""
    root = rows[0]
    key = f"diffimax-drill {root['fen']}|{root['color']}|{root['opponent_rating']}"
    return page.evaluate("(key) => JSON.parse(localStorage.getItem(key))", key)


def numbered(before: dict[str, Any], san: str) -> str:
    """A move played at the row's position as the drill says it: "4...Qg5", "5.Nxf7"."""
    board = chess.Board(before["fen"])
    return f"{board.fullmove_number}{'.' if board.turn == chess.WHITE else '...'}{san}"


def test_a_student_drills_a_line_to_a_sprung_trap_and_punishes_it(
    browser: Any, trap_repertoire: tuple[Path, list], tmp_path: Path
) -> None:
    out, rows = trap_repertoire
    by_id = {r["node_id"]: r for r in rows}
    assert [r for r in rows if r["trap"] and r["punishment_san"]], "the fixture's tree has no trap to drill"
    errors: list[str] = []
    page = drill_page(browser, out, 1, errors, clear=True)
    sprung = None
    for _ in range(60):  # lines drawn until a trap comes
        node_id, what = asking(page)
        prompt = page.locator(".drill-prompt").inner_text()
        reads_for_people(prompt)
        if what == "next":
            page.locator("input.drill-move").press("Enter")
            continue
        row = by_id[node_id]
        if row["mover"] == "opponent":  # the reply drawn, said with its share of the rating's players
            reply = numbered(by_id[row["parent_id"]], row["move_san"])
            said = re.search(rf"White plays {re.escape(reply)} \(({PERCENT}) of 1200 players play it\)", prompt)
            assert said and shows_percent(said[1], row["probability"]), (prompt, row["probability"])
        if what == "punishment":
            sprung = row
            before = by_id[row["parent_id"]]
            assert row["trap"] and abs(row["value_cp"]) < 90_000  # a loss in pawns (no mate here)
            assert f"It is a trap: it loses {max(0, row['value_cp'] - before['value_cp']) / 100:.1f} pawns." in prompt
            assert "Find Black's punishment." in prompt, prompt
            # docs/results/img/repertoire-drill.png is this screenshot.
            page.locator("section.explorer").screenshot(path=str(tmp_path / "repertoire-drill.png"))
            play(page, bare(answer(by_id, node_id, what)) + "+")  # typed with a check mark or without
            break
        assert what == "move", what
        play(page, answer(by_id, node_id, what))
        right = numbered(row, answer(by_id, node_id, what))
        assert page.locator(".drill-feedback").inner_text() == f"Right: {right}."
    assert sprung is not None, "no trap came in 60 steps"
    punishment = sprung["punishment_san"].split()[0]  # "5...Qxg2"
    assert page.locator(".drill-feedback").inner_text() == f"Right: {punishment}."
    summary = page.locator(".drill-summary").inner_text()
    trap = numbered(by_id[sprung["parent_id"]], sprung["move_san"])
    line = sprung["line_san"] + " " + bare(punishment)  # "4.Nxe5 Qg5 5.Nxf7 Qxg2"
    assert re.match(rf"Line \d+: {re.escape(line)}\. ", summary), (summary, line)
    share = re.search(rf"The trap {re.escape(trap)} \(({PERCENT}) of 1200 players play it\) came", summary)
    assert share and shows_percent(share[1], sprung["probability"]), summary
    assert summary.endswith(f"and you punished it with {punishment}. You found 2 of 2."), summary
    reads_for_people(summary)
    # The board shows the punishment played (the rows' move): the piece moved is on its square.
    move = chess.Move.from_uci(sprung["punishment_uci"][0])
    piece = chess.Board(sprung["fen"]).piece_at(move.from_square)
    assert piece is not None
    to = chess.square_name(move.to_square)
    assert page.locator(f'button[data-square="{to}"]').get_attribute("aria-label") == f"{to} {piece.symbol()}"
    assert page.locator(".drill-prompt").inner_text().endswith("Press Enter or New line for the next one.")
    assert drill_storage(page, rows) is None  # nothing missed, nothing stored
    # Explore shows the table again (the drill hides it: it shows the answers), Drill comes back.
    page.locator("button.mode-explore").click()
    assert page.locator("table.moves").is_visible() and not page.locator(".drill").is_visible()
    page.locator("button.mode-drill").click()
    assert page.locator(".drill").is_visible() and not page.locator("table.moves").is_visible()
    assert errors == []


def test_a_wrong_answer_is_said_stored_and_its_line_drilled_first_after_a_reload(
    browser: Any, trap_repertoire: tuple[Path, list]
) -> None:
    out, rows = trap_repertoire
    by_id = {r["node_id"]: r for r in rows}
    errors: list[str] = []
    page = drill_page(browser, out, 1, errors, clear=True)
    # Where each seed's first line first asks (nothing remembered): one seed to make a mistake
    # with, another whose first line goes elsewhere (so that only the memory can bring it back).
    first = {}
    for seed in range(1, 16):
        open_drill(page, out, seed)
        first[seed] = asking(page)
    moves = {seed: node for seed, (node, what) in first.items() if what == "move"}
    assert moves, first
    mistake_seed, mistaken = next(iter(moves.items()))
    others = [seed for seed, (node, _) in first.items() if node != mistaken]
    assert others, f"every seed's first line asks at node {mistaken}: the test cannot tell the memory from chance"
    row = by_id[mistaken]
    right = numbered(row, answer(by_id, mistaken, "move"))  # "4...Qg5"
    wrong = "h6" if bare(right) != "h6" else "a6"
    open_drill(page, out, mistake_seed)
    assert asking(page) == (mistaken, "move")
    play(page, wrong)
    number = right[: right.index(".")] + ("..." if "..." in right else ".")
    feedback = page.locator(".drill-feedback").inner_text()
    assert feedback == f"Not {number}{wrong}: the move is {right}. This position comes back first next time.", feedback
    reads_for_people(feedback)
    # Remembered under the repertoire's key, the position named by its moves from the tree's start.
    where = f"after 1.e4 e5 2.Nf3 Nc6 3.Bc4 Nd4 {row['line_san']}"
    stored = drill_storage(page, rows)
    assert stored == {"version": 1, "mistakes": {" ".join(row["path_uci"]): {"misses": 1, "where": where}}}, stored
    assert page.locator(".drill-memory").inner_text() == f"Positions you missed, drilled first: {where} (missed once)."
    # The line went on with the right move on the board.
    assert asking(page)[0] != mistaken
    page.close()
    # A new session in the same browser profile, with a seed whose first line goes elsewhere: it
    # goes to the missed position first.
    page = drill_page(browser, out, others[0], errors)
    assert asking(page) == (mistaken, "move"), (first, others[0])
    prompt = page.locator(".drill-prompt").inner_text()
    assert f"Back to a position you missed ({where})." in prompt, prompt
    reads_for_people(prompt)
    play(page, bare(right))
    assert page.locator(".drill-feedback").inner_text() == f"Right: {right}."
    assert drill_storage(page, rows) == {"version": 1, "mistakes": {}}  # answered right: forgotten
    # Missed again, then "Forget my mistakes".
    open_drill(page, out, mistake_seed)
    play(page, wrong)
    assert drill_storage(page, rows)["mistakes"][" ".join(row["path_uci"])]["misses"] == 1
    page.locator("button.drill-forget").click()
    assert drill_storage(page, rows) is None
    assert page.locator(".drill-memory").inner_text() == "No mistakes remembered yet."
    assert errors == []


def test_a_typed_move_is_read_as_a_legal_move_and_a_sound_one_is_no_mistake(
    browser: Any, repertoire: tuple[Path, list]
) -> None:
    """Issue 45: the drill compared the typed text with the answer, so an illegal move was "wrong"
    and a move the tree keeps within the safety margin was a mistake remembered for next time. Now
    an illegal move is said to be one (no answer counted), UCI is read too, and a sound move is no
    mistake: the line goes on with the repertoire's move."""
    out, rows = repertoire
    by_id = {r["node_id"]: r for r in rows}
    root = rows[0]
    children = [r for r in rows if r["parent_id"] == root["node_id"]]
    best = max(r["value_cp"] for r in children)
    margin = round(root["safety_margin"] * 100)
    sound = [r for r in children if not r["recommended"] and r["value_cp"] >= best - margin]
    assert sound, f"the fixture's first position has no sound move beside the recommended: {children}"
    errors: list[str] = []
    page = drill_page(browser, out, 1, errors, clear=True)
    assert asking(page) == (root["node_id"], "move")
    board = chess.Board(root["fen"])
    illegal = "Ke2" if not any(board.san(m) == "Ke2" for m in board.legal_moves) else "Qh4"
    play(page, illegal)
    feedback = page.locator(".drill-feedback").inner_text()
    assert feedback == f"{illegal} is not a legal move here. Try again: a move in SAN, e.g. Nf3 or exd5.", feedback
    assert asking(page) == (root["node_id"], "move") and drill_storage(page, rows) is None
    # A sound move typed in UCI: no mistake, and said as SAN with the repertoire's move beside it.
    move = sound[0]
    play(page, move["move_uci"])
    right = numbered(root, answer(by_id, root["node_id"], "move"))
    feedback = page.locator(".drill-feedback").inner_text()
    expected = (
        f"Sound: {numbered(root, move['move_san'])} keeps within {margin / 100:.2f} pawns of the best move, "
        f"but this repertoire plays {right}."
    )
    assert feedback == expected, feedback
    reads_for_people(feedback)
    assert drill_storage(page, rows) is None  # nothing remembered as missed
    assert asking(page)[0] != root["node_id"]  # the line went on
    # A legal move outside the tree's sound ones is a mistake, said in SAN.
    open_drill(page, out, 1, clear=True)
    outside = next(board.san(m) for m in board.legal_moves if board.san(m) not in {r["move_san"] for r in children})
    play(page, outside)
    feedback = page.locator(".drill-feedback").inner_text()
    assert feedback.startswith(f"Not {numbered(root, outside)}: the move is {right}."), feedback
    assert errors == []
