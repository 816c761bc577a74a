"""Textbook results from seeds 000, 002 and 003, through the library and the CLI."""

from __future__ import annotations

import json

import pytest

from search.alphabeta import Searcher, minimax_decision
from search.diffimax import DiffiMaxSearch, reference_diffimax
from search.settings import DiffiMaxSettings
from search.tree import TreeGame, TreeSyntaxError, parse_tree
from search.ttable import TranspositionTable
from tests.conftest import cli_in_process as run_cli  # argument and output tests: no process needed

THREE_BRANCH = "((3,12,8),(2,4,6),(14,5,2))"  # seed 002
FOUR_PLY = "(((8,7),(3,9)),((9,8),(2,4)),((1,8),(8,9)))"  # seed 002, b1..b3 / c1..c6
SEED_003_TREE = "((3,5,6),(9,1,2),(0,-1,7))"
SEED_000_NODE = "(-0.2, 1.1, 1.7, 3.2, 4.0)"


def test_three_branch_minimax():
    value, move, stats = minimax_decision(TreeGame(parse_tree(THREE_BRANCH)), 2)
    assert (value, move, stats.leaves) == (300, "0", 9)


def test_four_ply_minimax_examines_every_leaf():
    # The seed's tree as drawn (3 MIN nodes x 2 MAX nodes x 2 leaves) has 12 leaves; the seed's
    # "16 = 2^4" assumes a complete binary tree, which the drawing is not. Minimax examines
    # every leaf either way: 12 here, 16 on the binary tree below.
    value, move, stats = minimax_decision(TreeGame(parse_tree(FOUR_PLY)), 4)
    assert (value, move, stats.leaves) == (800, "0", 12)
    binary = parse_tree("((((8,7),(3,9)),((9,8),(2,4))),(((1,8),(8,9)),((5,6),(7,3))))")
    value, _, stats = minimax_decision(TreeGame(binary), 4)
    assert (value, stats.leaves) == (700, 16)  # MIN 7,3,8,2,1,8,5,3 -> MAX 7,8,8,5 -> MIN 7,5 -> 7


def test_seed_003_alphabeta_prunes_without_changing_the_value():
    tree = parse_tree(SEED_003_TREE)
    plain_value, _, plain = minimax_decision(TreeGame(tree), 2)
    searcher = Searcher(TreeGame(tree), ordering="natural")
    result = searcher.search(2)
    assert result.value == plain_value == 300
    # Left to right as in the seed: 3,5,6 | 9,1 (cut) | 0 (cut): 6 leaves, 3 branches cut.
    assert (searcher.stats.leaves, searcher.stats.cutoffs) == (6, 3)
    assert searcher.stats.leaves < plain.leaves == 9


@pytest.mark.parametrize("search", ["reference", "optimised"])
def test_seed_000_worked_example(search):
    tree = parse_tree(SEED_000_NODE)
    run = (
        reference_diffimax
        if search == "reference"
        else (lambda game, s: DiffiMaxSearch(game, s, tt=TranspositionTable()).run())
    )
    result = run(TreeGame(tree, root_is_max=False), DiffiMaxSettings(depth=1))
    assert {(t.move, t.dip) for t in result.traps} == {("1", 130), ("2", 190)}
    analysis = result.root_analysis
    assert analysis is not None and analysis.best == "0" and analysis.best_value == -20
    verdicts = {r.move: (r.reasonable, r.trap) for r in analysis.responses}
    assert verdicts["3"] == (False, False) and verdicts["4"] == (False, False)
    assert (analysis.reasonable_count, analysis.trap_count, analysis.trap_ratio) == (2, 2, 1.0)

    top2 = run(TreeGame(tree, root_is_max=False), DiffiMaxSettings(depth=1, scope=2))
    assert [t.move for t in top2.traps] == ["1"]
    examined = [r.move for r in top2.root_analysis.responses if r.in_scope]
    assert examined == ["1"]


def test_cli_three_branch_json():
    out = run_cli("tree", THREE_BRANCH, "--algorithm", "minimax", "--json", check=True)
    data = json.loads(out.stdout)
    assert (data["value"], data["best_move"], data["leaves"]) == (3, "0", 9)


def test_cli_four_ply_json():
    data = json.loads(run_cli("tree", FOUR_PLY, "--algorithm", "minimax", "--json", check=True).stdout)
    assert (data["value"], data["best_move"], data["leaves"]) == (8, "0", 12)


def test_cli_alphabeta_fewer_leaves():
    minimax = json.loads(run_cli("tree", SEED_003_TREE, "--algorithm", "minimax", "--json", check=True).stdout)
    pruned = json.loads(run_cli("tree", SEED_003_TREE, "--algorithm", "alphabeta", "--json", check=True).stdout)
    assert pruned["value"] == minimax["value"] == 3
    assert pruned["leaves"] < minimax["leaves"]
    assert pruned["cutoffs"] == 3


def job_file(tmp_path, text: str) -> str:
    """A job file holding `text` (TOML), for the settings that are no flags."""
    path = tmp_path / "job.toml"
    path.write_text(text)
    return str(path)


def test_cli_seed_000_json_fields(tmp_path):
    out = run_cli(
        "tree",
        SEED_000_NODE,
        "--root",
        "min",
        "--reasonable-dip",
        "2.0",
        "--trap-dip",
        "1.0",
        "--config",
        job_file(tmp_path, '[search]\nscope = "all"\n'),
        "--json",
        check=True,
    )
    data = json.loads(out.stdout)
    assert data["value"] == -0.2 and data["best_move"] == "0"
    for key in ("nodes", "leaves", "cutoffs"):
        assert isinstance(data[key], int)
    root = data["root_analysis"]
    assert root["best"] == "0" and root["meaningful"] == 5
    assert (root["reasonable_count"], root["trap_count"], root["trap_ratio"]) == (2, 2, 1.0)
    by_move = {r["move"]: r for r in root["responses"]}
    assert by_move["1"]["dip"] == pytest.approx(1.3) and by_move["1"]["trap"] is True
    assert by_move["2"]["dip"] == pytest.approx(1.9) and by_move["2"]["trap"] is True
    assert by_move["3"]["reasonable"] is False and by_move["4"]["reasonable"] is False
    assert [r["rank"] for r in root["responses"]] == [1, 2, 3, 4, 5]
    traps = sorted(data["traps"], key=lambda t: t["move"])
    assert [(t["move"], t["dip"], t["rank"], t["path"]) for t in traps] == [
        ("1", pytest.approx(1.3), 1, []),
        ("2", pytest.approx(1.9), 2, []),
    ]
    assert traps[0]["best_move"] == "0" and traps[0]["best_value"] == -0.2

    top2_file = job_file(tmp_path, '[search]\nscope = "2"\n')
    top2 = json.loads(
        run_cli("tree", SEED_000_NODE, "--root", "min", "--config", top2_file, "--json", check=True).stdout
    )
    assert [t["move"] for t in top2["traps"]] == ["1"]


def test_cli_text_report_has_the_seed_sections():
    out = run_cli("tree", SEED_000_NODE, "--root", "min", check=True).stdout
    for line in (
        "Best response: 0",
        "Trap candidate: 1",
        "Evaluation dip: 1.30",
        "Reasonable limit: 2.00",
        "Trap threshold: 1.00",
    ):
        assert line in out
    bars = [line for line in out.splitlines() if "█" in line]
    lengths = [line.count("█") for line in bars]
    assert len(bars) == 5 and lengths == sorted(lengths, reverse=True) and lengths[0] == 20


LEGAL_KINGS = "4k3/8/8/8/8/8/8/4K3 w - - 0 1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("tree", "((1,2),"), "malformed tree literal"),
        (("tree", "((1,2),())"), "has no children"),
        (("tree", "(1, 'a')"), "neither a number nor a tuple"),
        (("tree", "(1.234, 2)"), "more than two decimals"),
        (("tree", "(1,2)", "--trap-dip", "3"), "trap dip 3.0 exceeds reasonable dip 2.0"),
        # Refused by the flags' table (pipeline/cli/limits.py) before the settings are made.
        (("tree", "(1,2)", "--depth", "-1"), "invalid --depth -1: must be a whole number >= 0"),
        (("tree", "(1,2)", "--reasonable-dip", "-1", "--trap-dip", "-2"), "invalid --reasonable-dip -1.0: must be a"),
        (("tree", "(1,2)", "--safety-margin", "lots"), "invalid safety margin 'lots'"),
        (("tree", "(1,2)", "--root", "middle"), "invalid root 'middle'"),
        (("explain", "not a fen"), "invalid FEN 'not a fen'"),
        (("explain", "8/8/8/8/8/8/8/8 w - - 0 1"), "impossible position"),
        (("explain", "4k3/8/8/8/8/8/8/4K3 w - - 0 1", "--setter", "red"), "invalid setter 'red'"),
        # Once a traceback (explain at depth 0) or a job started for nothing (mine --depth 0).
        (("explain", LEGAL_KINGS, "--engine", "native", "--depth", "0"), "invalid --depth 0: a chess search needs"),
        (("mine", "no-such.pgn", "--out", "unused", "--depth", "0"), "invalid --depth 0: a chess search needs"),
        (("explain", LEGAL_KINGS, "--engine", "native", "--nodes", "0"), "invalid --nodes 0: must be a whole number"),
        (("evaluate", "no-such.pgn", "--shallow-depths", "a,b"), "invalid --shallow-depths 'a,b'"),
    ],
)
def test_cli_bad_input_is_one_clear_line(args, message):
    result = run_cli(*args)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0] and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "table", "message"),
    [
        (("tree", "(1,2)"), '[search]\nscope = "1"', "job file '{}': [search]: invalid scope '1': expected 2, 3, 4"),
        (("tree", "(1,2)"), "[search]\nscope = 2", "job file '{}': invalid search.scope = 2: expected text"),
        (
            ("explain", LEGAL_KINGS, "--engine", "native"),
            "[engine-options]\nmovetime = 0",
            "job file '{}': invalid engine-options.movetime 0.0: must be a number above 0",
        ),
        (
            ("explain", LEGAL_KINGS),
            "[engine-options]\nthreads = 0",
            "job file '{}': invalid engine-options.threads 0: must be a whole",
        ),
        (
            ("explain", LEGAL_KINGS),
            "[engine-options]\nthread = 1",
            "job file '{}': unknown key engine-options.thread ([engine-options] holds:",
        ),
        (
            ("tree", "(1,2)"),
            "[engine-options]\nthreads = 1",
            "job file '{}': unknown key 'engine-options' (tree takes: ",
        ),
    ],
)
def test_a_bad_job_file_table_is_one_line_naming_the_file_and_key(tmp_path, args, table, message):
    path = job_file(tmp_path, table + "\n")
    result = run_cli(*args, "--config", path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message.format(path) in lines[0], result.stderr


def test_parse_tree_rejects_booleans_and_infinities():
    with pytest.raises(TreeSyntaxError, match="boolean"):
        parse_tree("(True, 1)")
    with pytest.raises(TreeSyntaxError, match="not finite"):
        parse_tree("(1e999, 1)")
