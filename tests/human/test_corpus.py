"""Tests of `pipeline.human.corpus`: a damaged corpus file is named in one line, when it is loaded
and through the real command line (`explain` and `mine`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import GAMES, run_cli
from tests.human.helpers import EXPLAIN_FEN, assert_one_line_naming


def write_table(path: Path, columns: dict[str, list[object]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)
    return path


def test_damaged_corpus_files_are_named_in_one_line(tmp_path):
    from pipeline.human.corpus import Corpus, CorpusError

    good = {"position_key": [1, 2], "mover_rating": [1500, None], "move_uci": ["e2e4", "e7e8q"]}
    assert len(Corpus.load(write_table(tmp_path / "good.parquet", good))) == 2
    damages = {
        "key as text": ({**good, "position_key": ["a", "b"]}, "column 'position_key' holds string"),
        "rating as text": ({**good, "mover_rating": ["x", "1500"]}, "column 'mover_rating' holds string"),
        "no move column": ({"position_key": [1], "mover_rating": [1500]}, "column 'move_uci' is missing"),
        "bad move": ({**good, "move_uci": ["e2e4", "castle"]}, "column 'move_uci' holds 'castle' at row 1"),
        "empty move": ({**good, "move_uci": ["e2e4", None]}, "column 'move_uci' is empty in 1 row(s)"),
        "bad rating": ({**good, "mover_rating": [1500, 90000]}, "column 'mover_rating' holds 90000 at row 1"),
    }
    for name, (columns, expected) in damages.items():
        path = write_table(tmp_path / f"{name.replace(' ', '_')}.parquet", columns)
        with pytest.raises(CorpusError) as refused:
            Corpus.load(path)
        message = str(refused.value)
        assert "\n" not in message and expected in message and path.name in message, (name, message)


def test_a_damaged_corpus_fails_in_one_line_in_explain_and_mine(data_dir, tmp_path):
    corpus = write_table(
        tmp_path / "corpus.parquet", {"position_key": ["a"], "mover_rating": [1], "move_uci": ["e2e4"]}
    )
    explained = run_cli("explain", EXPLAIN_FEN, "--engine", "native", "--depth", "1", "--human-corpus", str(corpus))
    assert_one_line_naming(explained, "'position_key'", "corpus.parquet")
    out = tmp_path / "mined"
    mined = run_cli(
        "mine", str(GAMES / "lichess_100.pgn"), "--out", str(out), "--engine", "native", "--human-corpus", str(corpus)
    )
    assert_one_line_naming(mined, "'position_key'", "corpus.parquet")
    assert not out.exists()


def test_the_corpus_command_writes_a_loadable_corpus_and_never_through_a_link(data_dir, tmp_path):
    from pipeline.human.corpus import Corpus

    games = str(GAMES / "lichess_100.pgn")
    out = tmp_path / "corpus.parquet"
    written = run_cli("human", "corpus", "--games", games, "--out", str(out), "--corpus-splits", "train,tune,held_out")
    assert written.returncode == 0, written.stderr
    assert len(Corpus.load(out)) > 0 and sorted(p.name for p in tmp_path.iterdir()) == ["corpus.parquet"]
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    for kind in ("symbolic", "hard"):  # issue 42, item 3: O_NOFOLLOW alone would not see a hard link
        linked = tmp_path / f"{kind}.parquet"
        linked.symlink_to(victim) if kind == "symbolic" else linked.hardlink_to(victim)
        refused = run_cli("human", "corpus", "--games", games, "--out", str(linked))
        assert_one_line_naming(refused, f"{kind}.parquet", f"{kind} link")
        assert victim.read_text() == "keep me\n"
