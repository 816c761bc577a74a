"""Issue 29, items 1 and 4: nothing outside the dataset is touched, and a dataset's files are
read only as the schema says.

On main (571d7ff): `OUT/shards` a symbolic link to another directory, then `mine --resume
--repair`, deleted every other directory of the link's target (exit 0); `OUT/.lock` a link to a
file made `mine`, `report --out` and `puzzles` truncate that file; a manifest naming a shard
`../../victim/shards/<id>` or by an absolute path, or a shard directory that is a link, made
`query` read another dataset and `verify` say "all intact"; a dangling link as `--out` was
"[Errno 17] File exists" (the first two fixed in 337dcd4). Here each is refused in one line that names the link, nothing outside
the dataset changes, and `--repair` deletes a link in `shards/`, never what it points to. A
property test draws hostile layouts (links in and out, `..`, absolute names, dangling links,
strangers' directories in `shards/`) and runs every reader and writer over them: nothing outside
the scratch root's dataset changes, and nothing but a `DiffimaxError` is raised.

Item 4: on main a shard re-signed (its records recomputed) after a column was dropped, an int
column put where a string was, or NULLs written into a non-null column passed `verify` ("all
intact") and read back as NULLs or casts; here every reader refuses it in one line naming the
shard and the file, and `verify` also checks each value against its column's range.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.dataset.integrity import check_dataset, file_record
from pipeline.dataset.lock import output_lock
from pipeline.dataset.queries import run_query
from pipeline.dataset.store import DatasetWriter
from pipeline.dataset.verify import verify_dataset
from search.errors import DiffimaxError
from tests.conftest import GAMES, one_error_line, run_cli, snapshot
from tests.mining_helpers import SERVED, assert_same_rows

pytestmark = pytest.mark.cluster

# The first games of lichess_100.pgn, one position each, in shards of ~5 KB (several shards).
GAMES_MINED = 8
JOB = ["--engine", "material", "--plies", "10-10", "--workers", "1", "--human-model", "none", "--shard-mb", "0.005"]
COUNT_SQL = "select count(*) from positions"


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the job's input, its finished dataset)."""
    base = tmp_path_factory.mktemp("hostile")
    source = base / "games.pgn"
    text = (GAMES / "lichess_100.pgn").read_bytes()
    starts = [index for index in range(len(text)) if text.startswith(b"[Event ", index)]
    source.write_bytes(text[: starts[GAMES_MINED]])
    out = base / "run"
    run_cli("mine", str(source), "--out", str(out), *JOB, check=True)
    assert len(shard_dirs(out)) >= 2
    return source, out


def shard_dirs(out: Path) -> list[Path]:
    return sorted(path for path in (out / "shards").iterdir() if path.is_dir())


@pytest.fixture
def scratch(mined: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """(a copy of the dataset, a directory outside it holding another copy: the victim)."""
    data = tmp_path / "data"
    shutil.copytree(mined[1], data)
    outside = tmp_path / "outside"
    shutil.copytree(mined[1], outside / "victim")
    (outside / "photos").mkdir()
    (outside / "photos" / "a.jpg").write_bytes(b"\xff\xd8 a photo")
    (outside / "secret.txt").write_text("keep me\n")
    return data, outside


def test_resume_repair_over_a_linked_shards_directory_deletes_nothing(
    mined: tuple[Path, Path], scratch: tuple[Path, Path]
) -> None:
    """The issue's reproduction: `mv D/shards /x; mkdir /x/photos; ln -s /x D/shards`."""
    source, _ = mined
    data, outside = scratch
    (data / "shards").rename(outside / "x")
    (outside / "x" / "photos").mkdir()
    (outside / "x" / "photos" / "a.jpg").write_bytes(b"a photo")
    (data / "shards").symlink_to(outside / "x")
    before = snapshot(outside)
    line = one_error_line(run_cli("mine", str(source), "--out", str(data), *JOB, "--resume", "--repair"))
    assert "shards" in line and "symbolic link" in line, line
    assert snapshot(outside) == before
    for reader in (["query", "--data", str(data), COUNT_SQL], ["verify", "--data", str(data)]):
        assert "symbolic link" in one_error_line(run_cli(*reader))


def test_repair_never_deletes_a_strangers_directory_in_shards(
    mined: tuple[Path, Path], scratch: tuple[Path, Path]
) -> None:
    source, _ = mined
    data, _ = scratch
    (data / "shards" / "photos").mkdir()
    (data / "shards" / "photos" / "a.jpg").write_bytes(b"a photo")
    line = one_error_line(run_cli("mine", str(source), "--out", str(data), *JOB, "--resume", "--repair"))
    assert "photos" in line and "not a shard" in line, line
    assert (data / "shards" / "photos" / "a.jpg").read_bytes() == b"a photo"


def test_repair_unlinks_a_linked_shard_and_mines_it_again(mined: tuple[Path, Path], scratch: tuple[Path, Path]) -> None:
    source, original = mined
    data, outside = scratch
    shard = shard_dirs(data)[1]
    shutil.rmtree(shard)
    shard.symlink_to(outside / "victim" / "shards" / shard.name)
    before = snapshot(outside)
    resume = ["mine", str(source), "--out", str(data), *JOB, "--resume"]
    for reader in (["query", "--data", str(data), COUNT_SQL], resume):
        line = one_error_line(run_cli(*reader))
        assert shard.name in line and "symbolic link" in line, line
    verified = run_cli("verify", "--data", str(data))
    assert verified.returncode == 1 and f"shard {shard.name}: its directory is a symbolic link" in verified.stdout
    repaired = run_cli("mine", str(source), "--out", str(data), *JOB, "--resume", "--repair")
    assert repaired.returncode == 0, repaired.stderr
    assert snapshot(outside) == before
    assert not shard.is_symlink() and run_cli("verify", "--data", str(data)).returncode == 0
    assert_same_rows(data, original, ignore=SERVED)


@pytest.mark.parametrize("link", ["symbolic", "hard"])
@pytest.mark.parametrize("command", ["mine", "report", "puzzles"])
def test_a_linked_lock_file_is_refused_and_its_target_untouched(
    mined: tuple[Path, Path], scratch: tuple[Path, Path], tmp_path: Path, command: str, link: str
) -> None:
    # Issue 42, item 3: O_NOFOLLOW stops a symbolic link only; `ln victim OUT/.lock` truncated the victim.
    source, _ = mined
    data, outside = scratch
    out = tmp_path / "out"
    out.mkdir()
    if link == "symbolic":
        (out / ".lock").symlink_to(outside / "secret.txt")
    else:
        (out / ".lock").hardlink_to(outside / "secret.txt")
    args = {
        "mine": ["mine", str(source), "--out", str(out), *JOB],
        "report": ["report", "--data", str(data), "--out", str(out)],
        "puzzles": ["puzzles", "--data", str(data), "--out", str(out), "--workers", "1", "--human-model", "none"],
    }[command]
    line = one_error_line(run_cli(*args))
    assert ".lock" in line and ("symbolic link" if link == "symbolic" else "hard link") in line, line
    assert (outside / "secret.txt").read_text() == "keep me\n"


@pytest.mark.parametrize("name", ["relative", "absolute", "dot-dot"])
def test_a_manifest_naming_a_shard_outside_the_dataset_is_refused(scratch: tuple[Path, Path], name: str) -> None:
    data, outside = scratch
    manifest = json.loads((data / "manifest.json").read_text())
    victim = shard_dirs(outside / "victim")[0]
    shard_id = {
        "relative": f"../../outside/victim/shards/{victim.name}",
        "absolute": str(victim),
        "dot-dot": "..",
    }[name]
    manifest["shards"][shard_id] = manifest["shards"][victim.name]
    (data / "manifest.json").write_text(json.dumps(manifest))
    for args in (["query", "--data", str(data), COUNT_SQL], ["verify", "--data", str(data)]):
        line = one_error_line(run_cli(*args))
        assert "not a shard id" in line, line


def test_a_dangling_link_as_out_is_one_line_saying_so(mined: tuple[Path, Path], tmp_path: Path) -> None:
    source, data = mined
    out = tmp_path / "out"
    out.symlink_to(tmp_path / "nowhere")
    for args in (["mine", str(source), "--out", str(out), *JOB], ["report", "--data", str(data), "--out", str(out)]):
        line = one_error_line(run_cli(*args))
        assert "symbolic link" in line and "does not exist" in line, line
    assert not (tmp_path / "nowhere").exists()


# -- the property: hostile layouts, every reader and writer, nothing outside changes ------------

LAYOUTS = (
    "shards-linked",
    "shard-linked",
    "shard-dangling",
    "file-linked",
    "staging-linked",
    "manifest-linked",
    "job-linked",
    "lock-linked",
    "manifest-outside",
    "manifest-absolute",
    "stranger-directory",
    "stranger-link",
    # issue 42, item 3: hard links (O_NOFOLLOW cannot see them), links to directories, a directory
    # in a file's place
    "lock-hardlinked",
    "manifest-hardlinked",
    "job-hardlinked",
    "lock-dir-linked",
    "manifest-dir-linked",
    "manifest-directory",
)


def damage(data: Path, outside: Path, layout: str, index: int) -> None:
    """One hostile change to the dataset `data`, its links pointing into `outside`."""
    real = (data / "shards").is_dir() and not (data / "shards").is_symlink()  # never change outside here
    shards = [path for path in shard_dirs(data) if not path.is_symlink()] if real else []
    victim = shard_dirs(outside / "victim")
    shard = shards[index % len(shards)] if shards else None
    target = victim[index % len(victim)]
    with contextlib.suppress(FileExistsError, FileNotFoundError, NotADirectoryError, IsADirectoryError):
        if layout == "shards-linked" and real:
            shutil.rmtree(data / "shards")
            (data / "shards").symlink_to(outside / "victim" / "shards")
        elif layout in ("shard-linked", "shard-dangling") and shard is not None:
            shutil.rmtree(shard)
            shard.symlink_to(target if layout == "shard-linked" else outside / "nowhere")
        elif layout == "file-linked" and shard is not None:
            (shard / "positions.parquet").unlink()
            (shard / "positions.parquet").symlink_to(target / "positions.parquet")
        elif layout == "staging-linked":
            (data / "_staging").symlink_to(outside / "photos")
        elif layout in ("manifest-linked", "job-linked"):
            name = "manifest.json" if layout == "manifest-linked" else "job.json"
            (data / name).unlink(missing_ok=True)
            (data / name).symlink_to(outside / "victim" / name)
        elif layout == "lock-linked":
            (data / ".lock").unlink(missing_ok=True)
            (data / ".lock").symlink_to(outside / "secret.txt")
        elif layout in ("manifest-outside", "manifest-absolute") and not (data / "manifest.json").is_symlink():
            manifest = json.loads((data / "manifest.json").read_text())
            name = f"../../outside/victim/shards/{target.name}" if layout == "manifest-outside" else str(target)
            manifest.setdefault("shards", {})[name] = {"files": None}
            (data / "manifest.json").write_text(json.dumps(manifest))
        elif layout == "stranger-directory" and real:
            (data / "shards" / "photos").mkdir()
            (data / "shards" / "photos" / "a.jpg").write_bytes(b"a photo")
        elif layout in ("lock-hardlinked", "manifest-hardlinked", "job-hardlinked"):
            name = {"lock-hardlinked": ".lock", "manifest-hardlinked": "manifest.json", "job-hardlinked": "job.json"}[
                layout
            ]
            (data / name).unlink(missing_ok=True)
            (data / name).hardlink_to(outside / "secret.txt" if name == ".lock" else outside / "victim" / name)
        elif layout in ("lock-dir-linked", "manifest-dir-linked"):
            name = ".lock" if layout == "lock-dir-linked" else "manifest.json"
            (data / name).unlink(missing_ok=True)
            (data / name).symlink_to(outside / "photos")
        elif layout == "manifest-directory":
            (data / "manifest.json").unlink(missing_ok=True)
            (data / "manifest.json").mkdir()
            (data / "manifest.json" / "a.jpg").write_bytes(b"a photo")
        elif layout == "stranger-link" and real:
            (data / "shards" / f"{target.name[:-6]}999999").symlink_to(outside / "photos")


def every_reader_and_writer(data: Path, expected_count: int) -> None:
    """Every operation on a dataset's files, each either right or one DiffimaxError."""
    with contextlib.suppress(DiffimaxError):
        check_dataset(data, allow_partial=True)
    with contextlib.suppress(DiffimaxError):
        ((count,),) = run_query(data, COUNT_SQL).rows
        assert count == expected_count, "a query answered from data outside the dataset"
    with contextlib.suppress(DiffimaxError):
        verify_dataset(data)
    with contextlib.suppress(DiffimaxError), output_lock(data):
        writer = DatasetWriter.reopen(data, repair=True)
        writer.write_manifest({})
        writer.discard()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layouts=st.lists(st.tuples(st.sampled_from(LAYOUTS), st.integers(0, 7)), min_size=1, max_size=3))
def test_no_hostile_layout_changes_anything_outside_the_dataset(
    mined: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory, layouts: list[tuple[str, int]]
) -> None:
    root = tmp_path_factory.mktemp("layout")
    data, outside = root / "data", root / "outside"
    shutil.copytree(mined[1], data)
    shutil.copytree(mined[1], outside / "victim")
    (outside / "photos").mkdir()
    (outside / "photos" / "a.jpg").write_bytes(b"a photo")
    (outside / "secret.txt").write_text("keep me\n")
    ((expected,),) = run_query(data, COUNT_SQL).rows
    for layout, index in layouts:
        damage(data, outside, layout, index)
    before = snapshot(outside)
    strangers = {path: path.read_bytes() for path in data.rglob("a.jpg") if not path.is_symlink()}
    every_reader_and_writer(data, expected)
    assert snapshot(outside) == before, layouts
    assert all(path.read_bytes() == content for path, content in strangers.items()), layouts
    shutil.rmtree(root)


# -- item 4: a shard re-signed after its schema or values changed --------------------------------


def re_signed(data: Path, change: str) -> Path:
    """A shard whose positions.parquet is changed as `change` says, then re-signed: its record in
    `_shard.json` and in the manifest recomputed, so that every digest check passes."""
    shard = shard_dirs(data)[0]
    path = shard / "positions.parquet"
    table = pq.read_table(path)
    schema = table.schema
    if change == "column-dropped":
        table = table.drop_columns(["clock_seconds"])
    elif change == "int-for-string":
        position = schema.get_field_index("side_to_move")
        table = table.set_column(
            position, pa.field("side_to_move", pa.int32(), nullable=False), pa.array([7] * table.num_rows, pa.int32())
        )
    elif change == "nulls-in-non-null":
        position = schema.get_field_index("fen")
        table = table.set_column(position, pa.field("fen", pa.string()), pa.array([None] * table.num_rows, pa.string()))
    elif change == "out-of-range":
        position = schema.get_field_index("eval_cp")
        table = table.set_column(position, schema.field("eval_cp"), pa.array([30_000_000] * table.num_rows, pa.int32()))
    pq.write_table(table.replace_schema_metadata(schema.metadata), path, write_page_checksum=True)
    record = file_record(path).describe()
    info = json.loads((shard / "_shard.json").read_text())
    info["files"]["positions.parquet"] = record
    (shard / "_shard.json").write_text(json.dumps(info))
    manifest = json.loads((data / "manifest.json").read_text())
    manifest["shards"][shard.name]["files"]["positions.parquet"] = record
    (data / "manifest.json").write_text(json.dumps(manifest))
    return shard


@pytest.mark.parametrize("change", ["column-dropped", "int-for-string", "nulls-in-non-null", "out-of-range"])
def test_a_re_signed_shard_with_another_schema_or_values_is_named_by_verify_and_every_reader(
    scratch: tuple[Path, Path], change: str
) -> None:
    """main: each passed `verify` ("all intact"), and `query` read NULLs or cast values."""
    data, _ = scratch
    shard = re_signed(data, change)
    verified = run_cli("verify", "--data", str(data))
    assert verified.returncode == 1 and f"shard {shard.name}: positions.parquet" in verified.stdout, verified.stdout
    query = run_cli("query", "--data", str(data), "select count(*), count(clock_seconds), min(fen) from positions")
    if change == "out-of-range":  # the schema holds: only `verify` reads every value
        assert query.returncode == 0, query.stderr
        assert "30000000" in verified.stdout and "above 100000" in verified.stdout
    else:
        line = one_error_line(query)
        assert shard.name in line and "positions.parquet" in line, line
