"""`diffimax report`: one self-contained HTML page about a mined dataset.

The page holds the run's manifest, plots of the saved queries that matter most (PNG, embedded as
data URIs), the predicted fall probability against real falls, every saved query as a table, the
top trap positions drawn as boards (inline SVG from `chess.svg`), the top players and the errors.
It needs no JavaScript and loads nothing: its Content-Security-Policy forbids scripts and any
request but `data:` images.

Everything the data holds came from strangers' PGN headers (player names, events, game ids) and
reaches the page only through the builder of `pipeline.outputs.html` (`tag` escapes every plain
`str`, after `pipeline.common.sanitize` has replaced what is not XML text). The page is also
well-formed XML, which the tests check.

- `data.py`: the manifest, the saved queries' results and the boards' and errors' rows (the SQL
  beyond the saved queries is in `schemas/report.sql`);
- `plots.py`: the plots (matplotlib, PNG data URIs);
- `sections.py`, `boards.py`: the sections as HTML, the trap positions as boards;
- `falls.py`: the fall probability against real falls (the saved queries `calibration` and
  `trickiest-positions`: a reliability plot, the totals, the trickiest positions as small boards);
- `page.py`: the page, its style and policy, and `write_report`.
"""

from pipeline.outputs.report.data import ReportError
from pipeline.outputs.report.page import REPORT_NAME, write_report

__all__ = ["REPORT_NAME", "ReportError", "write_report"]
