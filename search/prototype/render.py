"""The comparison as JSON and as text. Pure."""

from __future__ import annotations

from typing import Any

from search.prototype.comparison import OVERLAP_COUNTS, Comparison, Overlap, Totals, TreeComparison
from search.prototype.seed import PrototypeTrap
from search.values import cp_to_pawns


def _ratio(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def overlap_json(overlap: Overlap) -> dict[str, Any]:
    data: dict[str, Any] = {"scope": overlap.scope}
    data.update({name: getattr(overlap, name) for name in OVERLAP_COUNTS})
    data["jaccard"] = _ratio(overlap.jaccard)
    data["jaccard_eligible"] = _ratio(overlap.jaccard_eligible)
    data["root_value_changed"] = 0  # checked on every tree (InvariantError otherwise)
    return data


def prototype_trap_json(trap: PrototypeTrap) -> dict[str, Any]:
    return {
        "path": list(trap.path),
        "children": trap.children,
        "best_move": trap.best_move,
        "best_value": cp_to_pawns(trap.best_value),
        "second_move": trap.second_move,
        "second_value": cp_to_pawns(trap.second_value),
        "substituted_value": cp_to_pawns(trap.substituted_value),
        "dip": cp_to_pawns(trap.dip),
        "minimax_value": cp_to_pawns(trap.minimax_value),
        "holds_on_minimax": trap.holds_on_minimax,
    }


def tree_json(row: TreeComparison, *, traps: bool = False) -> dict[str, Any]:
    p = row.prototype
    data: dict[str, Any] = {
        "index": row.index,
        "leaves": p.leaves,
        "opponent_nodes": p.opponent_nodes,
        "eligible_nodes": p.eligible_nodes,
        "prototype_nodes": len(p.traps),
        "changed_nodes": p.changed_nodes,
        "minimax_value": cp_to_pawns(p.minimax_value),
        "prototype_value": cp_to_pawns(p.value),
        "value_change": cp_to_pawns(row.value_change),
        "minimax_move": p.minimax_move,
        "prototype_move": p.best_move,
        "move_changed": row.move_changed,
        "revised": [overlap_json(o) for o in row.revised],
    }
    if traps:
        data["traps"] = [prototype_trap_json(t) for t in p.traps]
    return data


def totals_json(totals: Totals) -> dict[str, Any]:
    data: dict[str, Any] = {name: getattr(totals, name) for name in Totals.__dataclass_fields__ if name != "revised"}
    data["revised"] = [overlap_json(o) for o in totals.revised]
    return data


def comparison_json(comparison: Comparison, *, traps: bool = False) -> dict[str, Any]:
    """Settings, totals and one row per tree (with its prototype traps when `traps`)."""
    return {
        "settings": comparison.settings.describe(),
        "revised_settings": [r.describe() for r in comparison.revised_settings],
        "totals": totals_json(comparison.totals),
        "trees": [tree_json(row, traps=traps) for row in comparison.trees],
    }


def _percent(part: int, whole: int) -> str:
    return f"{part:,} ({100 * part / whole:.1f}%)" if whole else f"{part:,}"


def comparison_text(comparison: Comparison) -> str:
    """The totals as a readable table: the prototype beside each revised scope."""
    s, t = comparison.settings, comparison.totals
    revised = comparison.revised_settings
    names = ["prototype", *(f"revised {'All' if r.scope == 'all' else f'Top {r.scope}'}" for r in revised)]
    dash = "-"

    def jac(value: float | None) -> str:
        return dash if value is None else f"{value:.3f}"

    rows: list[tuple[str, list[str]]] = [
        ("trap nodes", [f"{t.prototype_nodes:,}", *(f"{o.trap_nodes:,}" for o in t.revised)]),
        (
            f"  at nodes with >= {s.min_children} children",
            [f"{t.prototype_nodes:,}", *(f"{o.trap_nodes_eligible:,}" for o in t.revised)],
        ),
        ("trap candidates (records)", [f"{t.prototype_nodes:,}", *(f"{o.candidates:,}" for o in t.revised)]),
        ("flagged by both", [dash, *(f"{o.both:,}" for o in t.revised)]),
        ("only prototype", [dash, *(f"{o.only_prototype:,}" for o in t.revised)]),
        ("only revised", [dash, *(f"{o.only_revised:,}" for o in t.revised)]),
        (
            f"only revised, >= {s.min_children} children",
            [dash, *(f"{o.only_revised_eligible:,}" for o in t.revised)],
        ),
        ("Jaccard, all opponent nodes", [dash, *(jac(o.jaccard) for o in t.revised)]),
        (f"Jaccard, >= {s.min_children} children", [dash, *(jac(o.jaccard_eligible) for o in t.revised)]),
        (
            "root value changed (trees)",
            [_percent(t.root_value_changed, t.trees), *("0" for _ in t.revised)],
        ),
        ("  mean change when changed", [f"{t.root_value_change_mean:+.2f}", *(dash for _ in t.revised)]),
        ("  largest change", [f"{t.root_value_change_max:+.2f}", *(dash for _ in t.revised)]),
        ("  mean change, all trees", [f"{t.root_value_change_all_mean:+.2f}", *("+0.00" for _ in t.revised)]),
        ("root move changed (trees)", [_percent(t.root_move_changed, t.trees), *("0" for _ in t.revised)]),
    ]
    label_width = max(len(label) for label, _ in rows)
    widths = [max(len(name), *(len(cells[i]) for _, cells in rows)) for i, name in enumerate(names)]
    walk = f"walk, step {s.step:g}" if s.values == "walk" else "uniform"
    r0 = revised[0]
    lines = [
        f"Prototype (seed 000) vs revised DiffiMax on {t.trees:,} random trees",
        f"trees: seed {s.seed}, depth {s.depth}, branching {s.min_branching}-{s.max_branching}, "
        f"values {walk}, limit +-{s.value_limit:g}, root {s.root.upper()}; "
        f"{t.leaves:,} leaves, {t.opponent_nodes:,} opponent nodes, "
        f"{_percent(t.eligible_nodes, t.opponent_nodes)} with >= {s.min_children} children",
        f"prototype: drawThresh {s.draw_thresh:g}, winThresh {s.win_thresh:g}, rule {s.draw_rule}, "
        f"min children {s.min_children}",
        f"revised: R {r0.reasonable_dip:g}, T {r0.trap_dip:g}, safety margin "
        f"{'inf' if r0.safety_margin is None else f'{r0.safety_margin:g}'}",
        "",
        " " * label_width + "  " + "  ".join(name.rjust(w) for name, w in zip(names, widths, strict=True)),
    ]
    for label, cells in rows:
        lines.append(
            label.ljust(label_width) + "  " + "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))
        )
    lines += [
        "",
        f"prototype trap dips v2 - v1: {t.prototype_dip_below_t:,} below T, {t.prototype_dip_in_range:,} "
        f"within [T, R], {t.prototype_dip_above_r:,} above R; "
        f"{t.prototype_holds_on_minimax:,} of {t.prototype_nodes:,} also hold on minimax values; "
        f"{t.changed_nodes:,} nodes' values changed by substitution",
    ]
    return "\n".join(lines)
