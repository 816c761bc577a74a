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


def test_one_meaning_has_one_name() -> None:
    names_of: dict[str, set[str]] = defaultdict(set)
    for flag, uses in vocabulary().items():
        for _, help_text, _ in uses:
            names_of[help_text].add(flag)
    shared = {help_text: names for help_text, names in names_of.items() if len(names) > 1}
    assert not shared, shared
    retired = sorted(set(RETIRED) & set(vocabulary()))
    assert not retired, [f"{flag}: use {RETIRED[flag]}" for flag in retired]


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
    from pipeline.cli.options import JudgeThresholds, build_judges, thresholds_of
    from search.judges import JudgeSettings

    practical = frozenset({"practical"})
    assert build_judges(None, practical, JudgeThresholds()).practical_drop == JudgeSettings().practical_drop
    assert build_judges(None, practical, JudgeThresholds(practical_drop=10.0)).practical_drop == 0.2
    assert JudgeThresholds().practical_drop == 50 * JudgeSettings().practical_drop == 7.5
    assert thresholds_of({"practical-drop": 10}, "job file 'j.toml'") == JudgeThresholds(practical_drop=10.0)


def test_a_percentage_is_written_one_way() -> None:
    """Issue 44, item 6: a probability, a score and a loss of Win% read alike everywhere ("24 %",
    one decimal below 10), and a small one never as 0."""
    assert [format_percent(p) for p in (0.24, 0.097, 0.0, 1.0)] == ["24 %", "9.7 %", "0 %", "100 %"]
    assert format_percent(0.0003) == "<0.1 %" and format_percent(0.061, signed=True) == "+6.1 %"
    assert format_percent_points(7.5) == "7.5 %" == format_win_loss(0.15)
