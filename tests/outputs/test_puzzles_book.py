"""The interactive puzzle book in a real headless Chromium (Playwright, Debian's /usr/bin/chromium,
never a browser download): a reader solves a puzzle by clicking, by dragging and by typing, a wrong
move is refused with "try again", the hint marks the piece, the solution is revealed; the page has
no network access and one script. The puzzles are hand-made (Legal's trap), so no engine runs."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import chess
import chess.engine
import pytest

from pipeline.outputs.puzzles import GameInfo, Puzzle, SolverCheck, render_html
from pipeline.outputs.puzzles.book import play_data
from pipeline.outputs.puzzles.pgn_out import render_pgn, site_text
from pipeline.outputs.puzzles.words import role
from search.values import MATE
from tests.conftest import CHROMIUM, needs_chromium, require_playwright

pytestmark = needs_chromium
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# 4...g6? in Legal's pattern: White punishes with 5.Nxe5 (a punish puzzle of two solver moves:
# 5.Nxe5 Bxd1 6.Bxf7+ Ke7 7.Nd5#, the last one a mate).
BEFORE_TRAP = "rn1qkbnr/ppp2ppp/3p4/4p3/2B1P1b1/2N2N2/PPPP1PPP/R1BQK2R b KQkq - 5 4"
LINE = ("g7g6", "f3e5", "g4d1", "c4f7", "e8e7", "c3d5")


def legal_puzzle(puzzle_id: str = "0123456789", fen: str = BEFORE_TRAP, moves: tuple[str, ...] = LINE) -> Puzzle:
    cp, mate = chess.engine.Cp, chess.engine.Mate
    checks = tuple(SolverCheck(i, mate(3 - i // 2), cp(0)) for i in range(1, len(moves), 2))
    return Puzzle(
        puzzle_id=puzzle_id,
        kind="punish",
        fen=fen,
        moves=moves,
        themes=("mate", "mateIn3"),
        game_url="",
        opening_tags="",
        checks=checks,
        game_ids=("g1",),
        game=GameInfo("g1", white="<b>W</b>", black="B"),
        ply=8,
        dip=300,
        rating=1500,
        rating_deviation=400,
    )


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("book") / "puzzles.html"
    # A second puzzle: the same trap one move earlier, ending on the first capture.
    path.write_text(render_html([legal_puzzle(), legal_puzzle("abcdef0123", moves=LINE[:2])]), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
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


def open_book(browser: object, book: Path) -> object:
    page = browser.new_page()  # type: ignore[attr-defined]
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(book.as_uri())
    page.requests, page.errors = requests, errors
    return page


def status(section: object) -> str:
    return str(section.locator(".status").inner_text())  # type: ignore[attr-defined]


def test_play_data_accepts_the_solution_and_knows_every_legal_move() -> None:
    data = play_data(legal_puzzle())
    assert data["orientation"] == "white" and list(data["steps"]) == ["1", "3", "5"]
    first = data["steps"]["1"]
    pairs = first["legal"].split(" ")
    legal = dict(zip(pairs[::2], pairs[1::2], strict=True))
    board = chess.Board(BEFORE_TRAP)
    board.push_uci("g7g6")
    assert first["accept"] == ["f3e5"] and legal["f3e5"] == "Nxe5" and len(legal) == board.legal_moves.count()
    assert data["line"].startswith("5.Nxe5 5...Bxd1")
    assert len(data["boards"]) == len(LINE) + 1 and data["boards"][1] == board.board_fen()
    assert len(data["captions"]) == len(LINE) + 1


def test_the_book_draws_one_board_per_puzzle_and_shares_its_shapes() -> None:
    # One board per puzzle, its pieces <use>s of shapes defined once: 60 puzzles well under 1.5 MB,
    # each one adding a few kilobytes (the book was ~230 KB a puzzle).
    one = render_html([legal_puzzle()])
    many = render_html([legal_puzzle(f"{n:010x}") for n in range(60)])
    assert len(many.encode()) < 1_500_000
    assert (len(many.encode()) - len(one.encode())) / 59 < 10_000
    assert many.count('<svg class="board"') == 60 and many.count("<symbol") + many.count('id="wN"') == 1
    assert "data:image" not in many


def test_a_reader_solves_by_click_drag_and_keyboard_and_a_wrong_move_is_refused(browser: object, book: Path) -> None:
    page = open_book(browser, book)
    section = page.locator('section[id="0123456789"]')  # type: ignore[attr-defined]
    assert "White to move" in status(section)
    # A legal but wrong move, by clicking: refused, the board stays.
    section.locator('button[data-square="h2"]').click()
    section.locator('button[data-square="h3"]').click()
    assert re.search(r"h3 is not the move .* try again", status(section)), status(section)
    # The hint marks the knight on f3.
    section.locator("button.hint").click()
    assert section.locator('button[data-square="f3"].hint').count() == 1 and "knight on f3" in status(section)
    # The right move by dragging the knight from f3 to e5; the reply is played for the reader.
    section.locator('button[data-square="f3"]').drag_to(section.locator('button[data-square="e5"]'))
    page.wait_for_function("s => s.textContent.includes('Your move')", arg=section.locator(".status").element_handle())  # type: ignore[attr-defined]
    # The next move by the keyboard: a typed wrong move first, then the right one (SAN).
    field = section.locator("input.move")
    field.fill("Bb5")
    field.press("Enter")
    assert "try again" in status(section)
    field.fill("Bxf7+")
    field.press("Enter")
    page.wait_for_function("s => s.textContent.includes('Your move')", arg=section.locator(".status").element_handle())  # type: ignore[attr-defined]
    # The mate by clicking c3 then d5.
    section.locator('button[data-square="c3"]').click()
    section.locator('button[data-square="d5"]').click()
    assert "Solved" in status(section) and "solved" in (section.get_attribute("class") or "")
    assert page.errors == [] and all(url.startswith(("file:", "data:")) for url in page.requests), page.requests


def test_the_themes_wait_for_the_solution(browser: object, book: Path) -> None:
    """Issue 44: "mate mateIn3" above the board gave the answer away. The themes are in the
    closed solution: not visible until the reader opens it."""
    page = open_book(browser, book)
    section = page.locator('section[id="0123456789"]')  # type: ignore[attr-defined]
    themes = section.get_by_text("Themes: mate mateIn3")
    assert themes.count() == 1 and not themes.is_visible()
    assert "mateIn3" not in str(section.locator(".meta").inner_text())
    section.locator("details summary").click()
    assert themes.is_visible()


def test_a_pgn_unknown_reads_as_nothing_above_the_board() -> None:
    """chess.com's games carry `Date "????.??.??"`: the coach's book printed it above every board."""
    unknown = dataclasses.replace(
        legal_puzzle(), game=GameInfo("g1", white="W", black="B", event="?", date="????.??.??")
    )
    known = dataclasses.replace(
        legal_puzzle(), game=GameInfo("g1", white="W", black="B", event="Club", date="2024.01.31")
    )
    assert "?" not in re.sub(r"<[^>]*>", "", render_html([unknown]).split('class="meta"')[1].split("</p>")[0])
    assert "Club · 2024.01.31" in render_html([known])


def test_the_set_puzzles_trap_reply_says_pawns_or_mate_never_the_marker() -> None:
    set_puzzle = dataclasses.replace(legal_puzzle(), kind="set", practical_trap=True, dip=140)
    assert role(set_puzzle, 2) == "the trap reply: it gives up 1.40 pawns"
    mate = dataclasses.replace(set_puzzle, dip=MATE - 4 - (-35))  # a mate in 2 against a best of -0.35
    assert role(mate, 2) == "the trap reply: it allows a forced mate"
    assert "999" not in render_pgn([mate]) and "999" not in render_html([mate])


@pytest.mark.parametrize(
    ("site", "tag"),
    [
        ("Chess.com", "Chess.com"),
        ("https://lichess.org/abcdefgh", "https://lichess.org/abcdefgh"),
        ("javascript:alert(1)", ""),
        ("?", "?"),
        (None, ""),
    ],
)
def test_the_pgn_site_keeps_a_place_and_a_url_and_drops_any_other_scheme(site: str | None, tag: str) -> None:
    assert site_text(site) == tag


def test_the_solution_is_revealed_and_arrow_keys_move_between_squares(browser: object, book: Path) -> None:
    page = open_book(browser, book)
    section = page.locator('section[id="abcdef0123"]')  # type: ignore[attr-defined]
    section.locator("button.solution").click()
    assert status(section).startswith("Solution: 5.Nxe5")
    assert "revealed" in (section.get_attribute("class") or "")
    board = chess.Board(BEFORE_TRAP)
    for move in LINE[:2]:
        board.push_uci(move)
    assert section.locator("svg.board .pieces use").count() == len(board.piece_map())  # the board after the line
    assert section.locator('svg.board .pieces use[href="#wN"][x="4"][y="3"]').count() == 1  # the knight on e5
    # The step buttons redraw the one board: the start has Black's pawn on g7, the puzzle on g6.
    section.locator('.steps button[data-step="0"]').click()
    assert section.locator('svg.board .pieces use[href="#bP"][x="6"][y="1"]').count() == 1
    assert status(section) == "Black to move."
    section.locator("button.restart").click()
    corner = section.locator('button[data-square="a8"]')
    corner.focus()
    page.keyboard.press("ArrowRight")  # type: ignore[attr-defined]
    page.keyboard.press("ArrowDown")  # type: ignore[attr-defined]
    focused = page.evaluate("document.activeElement.getAttribute('data-square')")  # type: ignore[attr-defined]
    assert focused == "b7"
    page.keyboard.press("Enter")  # type: ignore[attr-defined]  # b7 holds no white piece: nothing selected
    assert section.locator("button.from").count() == 0
    assert page.locator("script").count() == 1  # type: ignore[attr-defined]
