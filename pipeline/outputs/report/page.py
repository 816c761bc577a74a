"""The report's page: its sections in order, the style sheet and the Content-Security-Policy, and
`write_report`, which gathers the data, renders it and replaces the page atomically."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import duckdb

from pipeline.common.files import write_atomic
from pipeline.dataset.duck import connect, open_dataset
from pipeline.dataset.integrity import DatasetState, damage_named
from pipeline.dataset.objects import ObjectPath, dataset_path
from pipeline.outputs.html import Html, document, tag
from pipeline.outputs.report.boards import traps_section
from pipeline.outputs.report.data import board_details, error_rows, read_manifest, run_saved_queries
from pipeline.outputs.report.falls import falls_section
from pipeline.outputs.report.sections import (
    errors_section,
    judges_section,
    manifest_section,
    players_section,
    plots_section,
    summary_section,
    tables_section,
)

# File name of the page inside the output directory.
REPORT_NAME: Final = "report.html"

SECTIONS: Final = (
    ("summary", "Summary"),
    ("plots", "Plots"),
    ("falls", "Fall probability"),
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
th, td { padding: 3px 6px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #eef1f4; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.col-fen a, td.col-node-fen a, td.col-move, td.col-best-move, td.col-move-played { white-space: nowrap; }
td.col-opening, td.col-refutation { min-width: 12em; }
.plots { display: grid; grid-template-columns: repeat(auto-fit, minmax(540px, 1fr)); gap: 18px; }
figure { margin: 0; }
figure.plot img { display: block; max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { font-size: 13px; margin-top: 6px; }
.boards { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 16px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; font-size: 13px; }
figure.board { margin: 6px 0 10px; }
figure.board svg { display: block; width: 300px; height: 300px; }
figure.mini-board { margin: 0 0 2px; }
figure.mini-board svg { display: block; width: 150px; height: 150px; }
table.trickiest td { vertical-align: middle; }
.best { color: var(--best); font-weight: 600; }
.trap { color: var(--trap); font-weight: 600; }
.meta { color: var(--muted); }
""")


def render_page(title: str, sections: list[Html], subtitle: str) -> str:
    nav = tag("nav", [tag("a", label, href=f"#{anchor}") for anchor, label in SECTIONS])
    top = tag("header", tag("h1", title), tag("p", subtitle), class_="top")
    return document(title, [top, nav, tag("main", sections)], csp=CONTENT_SECURITY_POLICY, style=CSS)


def write_report(data: str | Path | ObjectPath, out: str | Path, *, allow_partial: bool = False) -> Path:
    """Write OUT/report.html about the dataset in `data` (`diffimax mine --out`); returns its path.

    Raises `pipeline.dataset.duck.DatasetError` when `data` holds no dataset, or a missing or
    damaged shard (unless `allow_partial`: then the page says what it leaves out), and
    `ReportError` when its manifest is unreadable; creates `out` when missing and replaces an
    earlier report atomically.
    """
    dataset = dataset_path(data)
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
    return write_atomic(path, page)


def report_sections(
    state: DatasetState, manifest: dict[str, Any] | None, connection: duckdb.DuckDBPyConnection
) -> list[Html]:
    """The page's sections, from the checked dataset `state`, its manifest and its open `connection`."""
    saved = run_saved_queries(state)
    top = saved.get("top-trap-positions")
    details = board_details(connection, top)
    errors = error_rows(connection)
    return [
        summary_section(state.root.resolve(), manifest, saved.get("lift")),
        judges_section(saved.get("judge-comparison"), (manifest or {}).get("primary_judge")),
        plots_section(saved.results),
        falls_section(saved),
        traps_section(top, details),
        players_section(saved.get("top-players")),
        tables_section(saved),
        errors_section(errors),
        manifest_section(manifest),
    ]
