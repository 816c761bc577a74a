"""One flag vocabulary (issue 33): typer's command tree walked, every flag name means one thing
(one help text) with one default on every command that takes it, no two names share a meaning,
and the names retired for a shared one stay retired."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import typer.main

from pipeline.cli import app
from search.values import format_percent, format_percent_points, format_win_loss

# A flag whose help names what this command writes: its meaning (where the output goes) is the same.
PER_COMMAND_HELP = frozenset({"--out"})

# Names retired for the one name of their meaning (old name: the name to use).
RETIRED = {
    "--engine-nodes": "--nodes",
    "--model": "--human-model",
    "--corpus": "--corpus-games (PGN inputs) or --human-corpus (a corpus file)",
    "--splits": "--split or --corpus-splits",
    "--sample": "--game-rate",
    "--sample-rate": "--position-rate, --train-rate",
    "--tune-sample-rate": "--tune-rate",
    "--opponent-rating": "--rating (play: the UCI option Opponent Rating)",
}


def flags_of(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, str, str, Any]]:
    """(command, flag, help, default) of every option in the tree below `command`."""
    if hasattr(command, "commands"):
        return [row for name, sub in command.commands.items() for row in flags_of(sub, (*path, name))]
    return [
        (" ".join(path), flag, param.help or "", param.default)
        for param in command.params
        if getattr(param, "param_type_name", None) == "option"
        for flag in param.opts
        if flag != "--help"
    ]


def vocabulary() -> dict[str, list[tuple[str, str, Any]]]:
    uses: dict[str, list[tuple[str, str, Any]]] = defaultdict(list)
    for command, flag, help_text, default in flags_of(typer.main.get_command(app)):
        uses[flag].append((command, help_text, default))
    return uses


def test_the_walk_sees_every_command_and_its_flags() -> None:
    commands = {command for uses in vocabulary().values() for command, _, _ in uses}
    assert {"mine", "explain", "puzzles", "evaluate", "play", "human train", "human eval"} <= commands
    assert len(vocabulary()) > 100


def test_one_flag_name_has_one_meaning_and_one_default() -> None:
    mixed = []
    for flag, uses in sorted(vocabulary().items()):
        helps = {help_text for _, help_text, _ in uses}
        defaults = {repr(default) for _, _, default in uses}
        if len(helps) > 1 and flag not in PER_COMMAND_HELP:
            mixed.append(f"{flag}: {len(helps)} meanings: " + "; ".join(f"{c}: {h!r}" for c, h, _ in uses))
        if len(defaults) > 1:
            mixed.append(f"{flag}: {len(defaults)} defaults: " + "; ".join(f"{c}: {d!r}" for c, _, d in uses))
    assert not mixed, "\n".join(mixed)


# What each flag name and each job-file key ("engine-options.threads") means, written by hand (issue 46:
# one name per meaning, compared by meaning, not by help text, so that a reworded twin is caught,
# on the command line or in a job file's tables). A new flag gets its line here; a meaning
# already listed is a second name for it: use the first. Flags of one word in different roles (an
# engine depth for a search, for the model's features, for a baseline) have meanings of their own.
MEANINGS: dict[str, str] = {
    "--address": "a running Ray cluster to join",
    "--algorithm": "the search algorithm of a textbook tree",
    "--allow-partial": "read a damaged or unfinished dataset",
    "--assume-games": "the games a plan assumes the input holds",
    "--baseline-depth": "the engine depth of an engine baseline of the human-move model",
    "--baseline-rate": "the share of positions the engine baselines are measured on",
    "--book-min-games": "the times a position is reached to enter the model's book",
    "--candidates": "the player's moves valued at a repertoire node",
    "--clock": "the responder's clock",
    "--color": "the repertoire player's colour",
    "--config": "a job file of flags",
    "--corpus-games": "the games a corpus baseline counts",
    "--corpus-splits": "the parts of the shared files a corpus counts",
    "--data": "a mined dataset to read",
    "--depth": "the DiffiMax search depth",
    "--dir": "the models directory",
    "--dump-examples": "where training examples are saved",
    "--evals": "a cache of engine evaluations standing in for root searches",
    "--engine": "the engine",
    "--feature-depth": "the engine depth of the model's engine features",
    "--files": "which output files are written",
    "--floor": "the probability a repertoire line needs to be explored",
    "--format": "how a query's answer is printed",
    "--from": "the position a line of moves starts from",
    "--game": "which game of a PGN file",
    "--game-rate": "the share of the games read",
    "--games": "the games a model or corpus learns from",
    "--groups": "the model's feature groups",
    "--human-corpus": "a corpus of what humans played",
    "--human-model": "the human-move model",
    "--in": "a repertoire's output to query",
    "--json": "print JSON",
    "--judges": "which trap judges run",
    "--kind": "which puzzle kinds",
    "--known-traps": "the set of known traps",
    "--learner": "the model's learner",
    "--limit": "the most puzzles written",
    "--line-plies": "the longest repertoire line",
    "--list": "list the saved queries",
    "--list-options": "list the UCI options",
    "--load": "read saved evidence instead of gathering it",
    "--margin": "how far a puzzle's best move must beat the second",
    "--max-elo": "the highest rating of a game read",
    "--max-game-mb": "the largest game read",
    "--max-games": "the most games read",
    "--max-positions": "the most positions a model evaluation measures (a cap, in order)",
    "--min-dip": "the smallest dip of a puzzle's trap",
    "--min-elo": "the lowest rating of a game read",
    "--moves": "a line of moves from the start",
    "--nodes": "a node limit per engine search",
    "--npm": "the npm command",
    "--option": "a UCI option by name",
    "--out": "where the output is written",
    "--per-game": "the most puzzles from one game",
    "--pgn": "a PGN file to take a position from",
    "--plan": "estimate the cost and stop",
    "--plan-sample": "the repertoire nodes a plan times",
    "--plan-seed": "the seed of a plan's samples",
    "--player-rating": "the player's own rating",
    "--plies": "the ply window of the positions mined",
    "--ply": "which ply of a PGN game",
    "--pool": "the rating pool",
    "--position-rate": "the share of positions a model evaluation measures",
    "--positions": "the positions the judges' evaluation samples (spread over games)",
    "--rated-only": "rated games only",
    "--rating": "the opponent's rating",
    "--read-only": "touch nothing outside the dataset",
    "--reasonable-dip": "the reasonable player dip R",
    "--reference-model": "a second human-move model measured beside the first",
    "--repair": "mine damaged shards again on resume",
    "--resume": "continue an interrupted run",
    "--revised-margin": "the safety margin of the revised DiffiMax the prototype is compared with (exhaustive by default)",
    "--root": "who moves at a tree's root",
    "--safety-margin": "the pawns the setter may give up for a trap line",
    "--sample-games": "the games a mining plan reads",
    "--sample-positions": "the positions a mining plan times",
    "--save": "where gathered evidence is saved",
    "--saved": "a saved query by name",
    "--scopes": "the scopes the prototype is compared at",
    "--script": "run every statement of the SQL",
    "--seed": "the seed of the command's random choices",
    "--setter": "the setter's colour",
    "--setter-choices": "record the setter's trap-setting moves",
    "--shallow-depths": "the shallow-pass depths the trappy judge is evaluated at",
    "--shard-games": "the games per shard of a stream",
    "--shard-mb": "the size of a shard of a file",
    "--source-game-rate": "one file's share of the games read",
    "--source-rate": "one file's share of the positions used",
    "--split": "which split of the shared files",
    "--standard": "the puzzle standard",
    "--style": "how the engine plays",
    "--table-mb": "the size of a worker's table of engine answers",
    "--time-control": "the time controls of the games read",
    "--train-rate": "the share of training positions used",
    "--trainer": "where a model is fitted",
    "--trap-dip": "the trap dip threshold T",
    "--trap-rating": "the rating assumed for the known traps' victims",
    "--traps": "list each tree's prototype traps",
    "--trees": "how many random trees",
    "--tune-rate": "the share of tune positions used for early stopping",
    "--url-timeout": "how long a URL may be silent",
    "--verbose": "show Ray's own log lines",
    "--root-width": "the player's first moves grown beyond one reply",
    "--width": "the player's candidates grown beyond one reply",
    "--workers": "the parallel workers",
    "engine-options.depth": "a depth limit per engine search",
    "engine-options.hash": "the engine's hash size",
    "engine-options.movetime": "a time limit per engine search",
    "engine-options.shallow-depth": "the shallow pass's depth",
    "engine-options.threads": "the engine's threads",
    "lightgbm.learning-rate": "the boosting's shrinkage",
    "lightgbm.max-rounds": "the most boosting rounds",
    "lightgbm.min-data-in-leaf": "the fewest moves in a tree leaf",
    "lightgbm.num-leaves": "the leaves per boosted tree",
    "lightgbm.threads": "the threads a model fit uses",
    "rule.draw-rule": "the prototype's draw rule",
    "rule.draw-thresh": "the prototype's draw threshold",
    "rule.min-children": "the fewest children of a prototype opponent node",
    "rule.win-thresh": "the prototype's win threshold",
    "search.exclude-captures": "leave capturing replies out of the alternatives",
    "search.exclude-checks": "leave checking replies out of the alternatives",
    "search.scope": "the opponent responses in scope",
    "thresholds.corpus-min-games": "the fewest corpus games for a verdict",
    "thresholds.corpus-share": "the smallest share of corpus games of a candidate",
    "thresholds.model-p": "the smallest model probability of a candidate",
    "thresholds.practical-drop": "the smallest loss of win chance of a practical candidate",
    "thresholds.practical-fall-p": "the smallest fall probability of a practical trap",
    "thresholds.practical-p": "the smallest human probability of a practical candidate",
    "thresholds.practical-rule": "the practical judge's rule",
    "thresholds.practical-shallow-k": "the shallow pass's k best that need less evidence",
    "thresholds.practical-shallow-p": "the human probability enough for those",
    "thresholds.trappy-k": "the shallow pass's k best a trappy candidate is among",
    "tree-shape.branching": "the children per node of a random tree",
    "tree-shape.depth": "the plies of a random tree",
    "tree-shape.step": "the random walk's step",
    "tree-shape.value-limit": "the clip of a random tree's values",
    "tree-shape.values": "how a random tree's leaves are valued",
}


def job_file_keys() -> set[str]:
    """Every job-file table key ("engine-options.threads") some command takes, from typer's tree."""
    from pipeline.cli.options import JOB_FILE_FIELDS

    return {
        f"{table}.{key}"
        for command in commands_of(typer.main.get_command(app)).values()
        for table, keys in getattr(command.callback, JOB_FILE_FIELDS, {}).items()
        for key in keys
    }


def test_one_meaning_has_one_name() -> None:
    flags = set(vocabulary()) | job_file_keys()
    assert flags == set(MEANINGS), {"without a meaning": flags - set(MEANINGS), "gone": set(MEANINGS) - flags}
    names_of: dict[str, list[str]] = defaultdict(list)
    for flag, meaning in MEANINGS.items():
        names_of[meaning].append(flag)
    assert not {meaning: names for meaning, names in names_of.items() if len(names) > 1}
    retired = sorted(set(RETIRED) & flags)
    assert not retired, [f"{flag}: use {RETIRED[flag]}" for flag in retired]


def test_a_job_files_table_never_shares_a_name_with_a_flag() -> None:
    """A job file holds a command's flags at its top level (`engine = "stockfish"`) and its
    tables beside them (`[engine-options]`): TOML cannot hold a key and a table of one name."""
    from pipeline.cli.options import JOB_FILE_FIELDS

    clashes = []
    for name, command in commands_of(typer.main.get_command(app)).items():
        keys = {flag.lstrip("-") for param in command.params for flag in getattr(param, "opts", ())}
        keys |= {param.name for param in command.params if param.param_type_name == "argument"}
        tables = set(getattr(command.callback, JOB_FILE_FIELDS, {}))
        clashes += [f"{name}: [{table}]" for table in sorted(tables & keys)]
    assert not clashes


def commands_of(command: Any, path: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every leaf command of the tree by its name ("human train")."""
    if hasattr(command, "commands"):
        return {
            name: leaf for n, sub in command.commands.items() for name, leaf in commands_of(sub, (*path, n)).items()
        }
    return {" ".join(path): command}


def test_help_answers_itself() -> None:
    """Issue 44: a flag's help never sends the reader to a help that does not say. --workers sends
    them to the command's description, so every command with --workers says there what its counts
    mean for Ray; no help says "see --help"."""
    uses = vocabulary()
    for name, command in commands_of(typer.main.get_command(app)).items():
        flags = {flag for param in command.params for flag in getattr(param, "opts", ())}
        if "--workers" in flags:
            text = " ".join((command.help or "").split())
            assert "--workers" in text and "Ray" in text, (name, text)
    assert not [(flag, command) for flag, rows in uses.items() for command, text, _ in rows if "see --help" in text]
    mine_help = " ".join((commands_of(typer.main.get_command(app))["mine"].help or "").split())
    assert "s3://" in mine_help


def test_the_puzzles_per_game_default_is_the_generators() -> None:
    from pipeline.outputs.puzzles.verify import DEFAULT_PER_GAME

    [(_, _, default)] = vocabulary()["--per-game"]
    assert default == DEFAULT_PER_GAME


def test_a_loss_threshold_takes_points_of_win_percent_and_the_judges_keep_the_rows_scale() -> None:
    """Issue 44, item 6: the job file's `thresholds.practical-drop` is given as people read a loss
    (points of Lichess's Win%, as the views' `*_win_pct_lost` show it); the judges and the rows
    hold it on 0..2."""
    from pipeline.cli.jobfile import read_table
    from pipeline.cli.options import JudgeThresholds, build_judges, job_file_fields
    from search.judges import JudgeSettings

    practical = frozenset({"practical"})
    assert build_judges(None, practical, JudgeThresholds()).practical_drop == JudgeSettings().practical_drop
    assert build_judges(None, practical, JudgeThresholds(practical_drop=10.0)).practical_drop == 0.2
    assert JudgeThresholds().practical_drop == 50 * JudgeSettings().practical_drop == 7.5
    fields = {spec.key: (JudgeThresholds, name) for name, spec in job_file_fields(JudgeThresholds).items()}
    assert read_table("thresholds", {"practical-drop": 10}, fields, "explain", "j") == {"practical-drop": 10.0}


def test_a_percentage_is_written_one_way() -> None:
    """Issue 44, item 6: a probability, a score and a loss of Win% read alike everywhere ("24 %",
    one decimal below 10), and a small one never as 0."""
    assert [format_percent(p) for p in (0.24, 0.097, 0.0, 1.0)] == ["24 %", "9.7 %", "0 %", "100 %"]
    assert format_percent(0.0003) == "<0.1 %" and format_percent(0.061, signed=True) == "+6.1 %"
    assert format_percent_points(7.5) == "7.5 %" == format_win_loss(0.15)
