"""The report's plots: the saved queries that matter most drawn with matplotlib's Agg canvas (no
display, no pyplot state), each a PNG data URI. A plot with nothing to draw is not drawn: its
`plot_*` function returns the reason instead (the report says it in one line). Count labels that
would overlap are left out (`hide_overlaps`), so the ones drawn can be read."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from pipeline.dataset.queries import QueryResult
from pipeline.outputs.report.data import number, records
from search.values import format_percent

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# Plot size in inches at PLOT_DPI (640 x 360 pixels).
PLOT_INCHES: Final = (6.4, 3.6)
PLOT_DPI: Final = 100
# Width of the rating bands of fall-rate-by-rating, in rating points.
RATING_BAND: Final = 200


# The gid of the count labels, which `hide_overlaps` thins out.
COUNT_LABEL: Final = "count-label"
# A drawer, or why there is nothing to draw.
Drawer = Callable[["Axes"], None]


def draw_png(draw: Drawer) -> tuple[bytes, Figure]:
    """One plot drawn with matplotlib's Agg canvas (no display, no pyplot state): the PNG and its figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=PLOT_INCHES, dpi=PLOT_DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    draw(axes)
    figure.canvas.draw()  # the layout, so that the labels have their places
    hide_overlaps(axes)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue(), figure


def png_data_uri(draw: Drawer) -> str:
    """One plot (`draw_png`) as a data URI."""
    png, _ = draw_png(draw)
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def hide_overlaps(axes: Axes) -> None:
    """Leaves out each count label that would overlap one drawn before it (left to right)."""
    renderer = axes.figure.canvas.get_renderer()  # type: ignore[attr-defined]
    kept: list[Any] = []
    labels = sorted((t for t in axes.texts if t.get_gid() == COUNT_LABEL), key=lambda t: t.get_position()[0])
    for label in labels:
        box = label.get_window_extent(renderer).expanded(1.1, 1.1)
        if any(box.overlaps(other) for other in kept):
            label.set_visible(False)
        else:
            kept.append(box)


def _interval(row: dict[str, Any], rate: str) -> tuple[float, float, float]:
    """The rate and how far its Wilson interval reaches below and above it (never negative: the
    SQL bounds can miss the rate by rounding, e.g. a low bound of 1e-17 for a rate of 0)."""
    value = number(row[rate]) or 0.0
    low = number(row["wilson_low"])
    high = number(row["wilson_high"])
    return value, max(0.0, value - (value if low is None else low)), max(0.0, (value if high is None else high) - value)


def _rates(axes: Axes, x: list[float], rows: list[dict[str, Any]], rate: str, count: str) -> None:
    """Points with their Wilson 95 % interval, each labelled with the count behind it."""
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
            gid=COUNT_LABEL,
        )
    axes.yaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_ylim(bottom=0)
    axes.margins(x=0.08)
    axes.grid(alpha=0.3)


def plot_rating(result: QueryResult) -> Drawer | str:
    rows = [row for row in records(result) if row["trap_nodes"] and row["rating_band"] is not None]
    if not rows:
        return "no trap node has a rated responder"

    def draw(axes: Axes) -> None:
        _rates(axes, [float(row["rating_band"]) + RATING_BAND / 2 for row in rows], rows, "fall_rate", "trap_nodes")
        axes.set_xlabel(f"responder's rating ({RATING_BAND}-point bands, at their centre)")
        axes.set_ylabel("fall rate at trap nodes")

    return draw


def plot_clock(result: QueryResult) -> Drawer | str:
    rows = [row for row in records(result) if row["trap_nodes"] and row["clock"] is not None]
    if not rows:
        return "the games carry no clock times (%clk comments)"

    def draw(axes: Axes) -> None:
        _rates(axes, [float(i) for i in range(len(rows))], rows, "fall_rate", "trap_nodes")
        # The query sorts its buckets by a "N: " prefix; the axis shows the rest.
        axes.set_xticks(range(len(rows)), [str(row["clock"]).partition(": ")[2] or str(row["clock"]) for row in rows])
        axes.set_xlabel("responder's clock when deciding")
        axes.set_ylabel("fall rate at trap nodes")

    return draw


def plot_dip(result: QueryResult) -> Drawer | str:
    rows = [row for row in records(result) if row["candidates"] and row["dip_from"] is not None]
    if not rows:
        return "no trap candidates at analysed positions"

    def draw(axes: Axes) -> None:
        x = [(float(row["dip_from"]) + float(row["dip_to"])) / 2 for row in rows]
        _rates(axes, x, rows, "play_rate", "candidates")
        axes.set_xlabel("dip of the trap candidate (pawns, 0.25-pawn buckets)")
        axes.set_ylabel("how often it was played")

    return draw


def plot_lift(result: QueryResult) -> Drawer | str:
    rows = [row for row in records(result) if row["trap_nodes"] and row["fall_rate"] is not None]
    if not rows:
        return "no trap nodes with a meaningful reply"

    def draw(axes: Axes) -> None:
        from matplotlib.ticker import PercentFormatter

        row = rows[0]
        observed, below, above = _interval(row, "fall_rate")
        chance = number(row["chance_rate"]) or 0.0
        axes.bar([0, 1], [observed, chance], color=["#a3262a", "#9aa5ae"], width=0.55)
        axes.errorbar([0], [observed], yerr=[[below], [above]], capsize=6, color="#1d232a")
        axes.set_xticks([0, 1], ["observed fall rate", "chance: a random meaningful reply"])
        axes.yaxis.set_major_formatter(PercentFormatter(1.0))
        axes.set_ylabel("share of trap nodes")
        lift = number(row["lift"])
        axes.set_title(
            f"lift {lift:.2f}x over {row['trap_nodes']} trap nodes" if lift is not None else "lift: n/a", fontsize=10
        )
        axes.grid(axis="y", alpha=0.3)

    return draw


def _calibration_overall(result: QueryResult) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The overall rows of `calibration`: each tenth of fall_p with occurrences, and the total."""
    overall = [row for row in records(result) if row["grouping"] == "overall" and row["occurrences"]]
    total = next((row for row in overall if row["fall_p_bin"] == "all"), None)
    return [row for row in overall if row["fall_p_bin"] != "all"], total


def plot_calibration(result: QueryResult) -> Drawer | str:
    """The reliability diagram: each tenth's mean fall_p against how often humans fell there."""
    rows, total = _calibration_overall(result)
    if not rows or total is None:
        return "no occurrence has both a fall estimate and a valued played move"

    def draw(axes: Axes) -> None:
        from matplotlib.ticker import PercentFormatter

        axes.plot([0, 1], [0, 1], linestyle="--", color="#9aa5ae", linewidth=1, label="perfect calibration")
        _rates(axes, [number(row["fall_p"]) or 0.0 for row in rows], rows, "fall_rate", "occurrences")
        axes.set_xlim(0, 1.08)  # room for the last count label
        axes.set_ylim(0, 1.05)
        axes.xaxis.set_major_formatter(PercentFormatter(1.0))
        axes.set_xlabel("predicted fall probability (mean fall_p of each tenth)")
        axes.set_ylabel("observed fall rate")
        ece, brier = number(total["ece"]) or 0.0, number(total["brier"]) or 0.0
        title = f"ECE {format_percent(ece)}, Brier {brier:.3f}, over {total['occurrences']:,} occurrences"
        axes.set_title(title, fontsize=10)
        axes.legend(loc="upper left", fontsize=8, frameon=False)

    return draw


# Plots: (saved query, title, how to read it, drawer).
PLOTS: Final[tuple[tuple[str, str, str, Callable[[QueryResult], Drawer | str]], ...]] = (
    (
        "fall-rate-by-rating",
        "Fall rate by rating",
        "Share of trap nodes where the responder played a trap candidate, by the responder's rating; bars are "
        "Wilson 95 % intervals, n is the number of trap nodes.",
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
