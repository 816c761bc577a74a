"""`parse_choices`: the one reading of a flag that names some of a fixed set (`--files`, `--kind`,
`--corpus-splits`)."""

from __future__ import annotations

import pytest

from pipeline.cli.human import corpus_command
from pipeline.common.choices import parse_choices
from pipeline.human.train import TrainError
from pipeline.outputs.puzzles import PuzzleError, parse_formats
from pipeline.outputs.repertoire.write import parse_repertoire_files as repertoire_files
from pipeline.repertoire.settings import RepertoireError


def test_choices_are_read_in_the_order_given_each_once_and_all_is_every_one() -> None:
    known = ("csv", "pgn", "html")
    assert parse_choices(" HTML,csv, html", known, "--files") == ("html", "csv")
    assert parse_choices(["pgn"], known, "--files") == parse_choices("pgn,,", known, "--files") == ("pgn",)
    assert parse_choices(" All ", known, "--files") == known
    with pytest.raises(ValueError, match=r"^invalid --files 'svg': expected csv, pgn, html or all$"):
        parse_choices("csv,svg", known, "--files")
    with pytest.raises(ValueError, match=r"^invalid --files ' , ': expected csv, pgn, html or all$"):
        parse_choices(" , ", known, "--files")


def test_puzzles_and_the_repertoire_refuse_a_file_kind_alike() -> None:
    with pytest.raises(PuzzleError, match=r"^invalid --files 'svg': expected csv, pgn, html or all$"):
        parse_formats("svg")
    with pytest.raises(RepertoireError, match=r"^invalid --files 'svg': expected parquet, pgn, html or all$"):
        repertoire_files("svg")
    assert repertoire_files("all") == {"parquet", "pgn", "html"}


def test_a_group_word_names_its_choices() -> None:
    known = ("punish", "set", "defend")
    both = {"both": ("punish", "set")}
    assert parse_choices("defend,both", known, "--kind", groups=both) == ("defend", "punish", "set")
    assert parse_choices("set, BOTH", known, "--kind", groups=both) == ("set", "punish")
    with pytest.raises(ValueError, match=r"^invalid --kind 'every': expected punish, set, defend, both or all$"):
        parse_choices("every", known, "--kind", groups=both)


def test_the_corpus_splits_are_read_like_every_other_choice() -> None:
    with pytest.raises(TrainError, match=r"^invalid --corpus-splits 'bogus': expected train, tune, held_out or all$"):
        corpus_command(games=[], out="unused.parquet", corpus_splits="train,bogus")
