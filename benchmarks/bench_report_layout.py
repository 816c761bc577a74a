"""How a report reads on a screen: its page height at 1,400 px, the tables that scroll sideways at
1,280 px, the tallest sections, and a screenshot of the first 2,400 px, in headless Chromium.

  python -m benchmarks.bench_report_layout REPORT.html [--shot OUT.png]

Issue 44's coach mined 40 of their club's games and found the page 42,000 px tall, 30,000 of them
one table. The figures for a 40-game dataset (`diffimax mine chesscom_mixed_1187.pgn --max-games 40
--engine native --depth 2`, then `diffimax report`) are in docs/results/outputs.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tests.conftest import CHROMIUM

# Sections and tables taller than this are listed.
TALL_PX = 1_500


def measure(report: Path, shot: Path | None) -> dict[str, object]:
    from playwright.sync_api import sync_playwright

    found: dict[str, object] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"], headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(report.resolve().as_uri())
            found["sideways_at_1280"] = page.evaluate(
                "[...document.querySelectorAll('.table-wrap')].filter(w => w.scrollWidth > w.clientWidth + 1)"
                ".map(w => [w.closest('section').id, w.scrollWidth, w.clientWidth])"
            )
            page.set_viewport_size({"width": 1400, "height": 900})
            found["height_at_1400"] = page.evaluate("document.documentElement.scrollHeight")
            found["sections"] = page.evaluate(
                "[...document.querySelectorAll('main > section')]"
                ".map(s => [s.id, Math.round(s.getBoundingClientRect().height)])"
            )
            found["tall_tables"] = page.evaluate(
                f"[...document.querySelectorAll('.table-wrap')].map(w => [w.closest('section').id, "
                f"Math.round(w.getBoundingClientRect().height)]).filter(t => t[1] > {TALL_PX})"
            )
            if shot is not None:
                page.set_viewport_size({"width": 1400, "height": 2400})
                page.screenshot(path=str(shot))
        finally:
            browser.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--shot", type=Path)
    arguments = parser.parse_args()
    print(json.dumps(measure(arguments.report, arguments.shot), indent=1))


if __name__ == "__main__":
    main()
