"""A soak run of `diffimax mine` (issue 18): a long job under random kills, resumed until it is
done, must give the rows of an undisturbed run and leave no process behind.

  python -m benchmarks.bench_soak [--games 2000] [--plies 10-16] [--nodes 1000] [--interval 20-60]
                                  [--seed 0] [--checkout DIR] [--work DIR] [--reference DIR] [--json FILE]

Not part of the test suite (an hour or more on a shared 2-core machine). What it does:

1. The undisturbed run: the real CLI (`python -m pipeline.cli mine`) with Stockfish over the first
   `--games` games of `--input`, at an engine budget a 2-core machine affords (`--plies`,
   `--nodes`, `--shard-games`, `--workers`; Threads 1 and node limits: the searches are
   deterministic, so two runs give the same rows). `--reference DIR` takes a finished run instead
   (its job identity must equal the disturbed run's). `--checkout DIR` runs the CLI of another
   source tree (a `git archive` of a commit: others' edits of the working tree then cannot change
   the code between the runs), with this project's virtualenv.
2. The disturbed run: the same command in a session of its own, while a killer SIGKILLs, every
   `--interval` seconds (uniform, seeded by `--seed`), a target drawn among `--kinds`: a worker
   (a Ray process of the job's own work: an analysis actor `ray::MiningWorker`, or a
   `ray::prepare`, `ray::write`, `ray::read_stream` task), a Stockfish process, or the driver. A
   kind with no process at that moment (Ray still starting) is waited for, so that the kinds stay
   evenly drawn. When the driver ends other than with exit 0 (killed, or failed on its own), its
   session gets `GRACE` seconds to end (what is alive then is a leftover: reported, then killed),
   and `mine ... --resume` with the same settings starts, until a start exits 0.
3. The comparison, in DuckDB over the Parquet files of both datasets: per table, every column but
   `reused` (`tests.mining_helpers.SERVED`: which occurrences a worker's table served, which a
   restarted worker or a resumed run changes; no row column holds a time), EXCEPT ALL both ways,
   with the row counts; `assert_counts_add_up` over the manifest, and `diffimax verify`.
4. Leftovers: no process of any session this benchmark started may outlive the last driver by
   `GRACE`, nor a SIGKILLed driver by `KILLED_GRACE` (Ray's agents take a fixed minute to give up
   on the dead GCS; `ray::` workers, raylet, gcs_server, Stockfish: all stay in the driver's
   session, see `tests.processes`).

Exit 1 on any difference, leftover, failed reference, or a job that never finished.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb

from schemas.dataset import TABLES
from tests.mining_helpers import SERVED, assert_counts_add_up
from tests.processes import command_line, session_of

ROOT = Path(__file__).resolve().parent.parent
GAMES = ROOT.parent / "shared" / "data" / "games"
INPUT = GAMES / "lichess_player_a_37221.pgn.zst"

Kind = Literal["worker", "stockfish", "driver"]
KINDS: tuple[Kind, ...] = ("worker", "stockfish", "driver")
# The Ray processes of the job's own work a "worker" kill may hit (Ray's process titles).
WORKER_TITLES = ("ray::MiningWorker", "ray::prepare", "ray::write", "ray::read_stream")
# Seconds the sessions get, once the last driver has exited, before what is left counts as a leftover.
GRACE = 30.0
# Seconds a SIGKILLed driver's session gets from its driver's end: Ray's agents notice the raylet's
# death at once, then spend Ray's fixed 60 s (`publish_error_to_driver`, no setting) reporting it
# to the dead GCS before they exit on their own (docs/results/mining.md); beyond this they are leftovers.
KILLED_GRACE = 60.0 + GRACE
# Seconds between looks at the driver and its processes.
POLL = 0.25
# Driver starts before the benchmark gives up on a job that never finishes.
MAX_STARTS = 400


@dataclass
class Kill:
    """One SIGKILL: when (seconds since the disturbed run began), what, in which driver start."""

    at: float
    kind: Kind
    pid: int
    title: str
    start: int


@dataclass
class Start:
    """One driver start of the disturbed run: how it ended and what its session left behind."""

    index: int
    resume: bool
    seconds: float = 0.0
    code: int | None = None
    killed: bool = False
    """The killer's SIGKILL ended it."""
    last_line: str = ""
    """Its last stderr line, when it failed on its own."""
    ended_after: float | None = None
    """Seconds from the driver's end to its session's (the last of its processes), if it ended."""
    leftovers: dict[int, str] = field(default_factory=dict)
    """Its processes still alive `GRACE` seconds after the last driver's end."""


def mine_command(args: argparse.Namespace, out: Path) -> list[str]:
    inputs = [str(path) for path in args.input]
    return [
        sys.executable,
        "-m",
        "pipeline.cli",
        "mine",
        *inputs,
        "--out",
        str(out),
        "--engine",
        "stockfish",
        "--max-games",
        str(args.games),
        "--plies",
        args.plies,
        "--nodes",
        str(args.nodes),  # one engine thread per worker: the default (engine-options.threads)
        "--workers",
        str(args.workers),
        "--shard-games",
        str(args.shard_games),
    ]


def launch(args: argparse.Namespace, command: list[str], name: str, logs: Path) -> subprocess.Popen[bytes]:
    """`command` in a session of its own (as a terminal runs it), in `--checkout`, logs to `logs`."""
    env = os.environ | {"PYTHONPATH": str(args.checkout)}  # before the editable install's finder
    with open(logs / f"{name}.out", "wb") as stdout, open(logs / f"{name}.err", "wb") as stderr:
        return subprocess.Popen(
            command, cwd=args.checkout, env=env, stdout=stdout, stderr=stderr, start_new_session=True
        )


def sessions(sids: set[int]) -> dict[int, dict[int, str]]:
    """The live processes (zombies excluded) of each session of `sids` that has any, in one pass over /proc."""
    found: dict[int, dict[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        sid = session_of(pid)
        if sid in sids:
            try:
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z":
                found.setdefault(sid, {})[pid] = command_line(pid)
    return found


def targets(sid: int) -> dict[Kind, dict[int, str]]:
    """The processes of session `sid` (led by the driver) a kill of each kind may hit."""
    found: dict[Kind, dict[int, str]] = {kind: {} for kind in KINDS}
    for pid, line in sessions({sid}).get(sid, {}).items():
        if pid == sid:
            found["driver"][pid] = line
        elif line.startswith(WORKER_TITLES):
            found["worker"][pid] = line
        elif Path(line.split(" ", 1)[0]).name.startswith("stockfish"):
            found["stockfish"][pid] = line
    return found


class Ends:
    """The sessions of drivers that have exited, watched until their last process is gone: how long
    each outlived its driver, and which outlive the run (leftovers, killed once reported)."""

    def __init__(self) -> None:
        self.pending: dict[int, tuple[Start, float]] = {}

    def add(self, start: Start, sid: int) -> None:
        self.pending[sid] = (start, time.monotonic())

    def sweep(self) -> None:
        if not self.pending:
            return
        alive = sessions(set(self.pending))
        for sid in [sid for sid in self.pending if sid not in alive]:
            start, ended = self.pending.pop(sid)
            start.ended_after = round(time.monotonic() - ended, 1)

    def finish(self, seconds: float, killed_seconds: float = KILLED_GRACE) -> None:
        """Wait `seconds` from now, and for a killed driver's session `killed_seconds` from its
        driver's end, whichever is later; what is alive then is a leftover."""
        now = time.monotonic()
        killed_ends = [ended + killed_seconds for start, ended in self.pending.values() if start.killed]
        deadline = max([now + seconds, *killed_ends])
        self.sweep()
        while self.pending and time.monotonic() < deadline:
            time.sleep(POLL)
            self.sweep()
        for sid, processes in sessions(set(self.pending)).items():
            self.pending[sid][0].leftovers = processes
            for pid in processes:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def last_line(path: Path) -> str:
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def undisturbed(args: argparse.Namespace, out: Path, logs: Path) -> Start:
    """The job without a kill (reported as a `Start` of its own)."""
    started = time.monotonic()
    process = launch(args, mine_command(args, out), "reference", logs)
    run = Start(index=-1, resume=False, code=process.wait(), seconds=round(time.monotonic() - started, 1))
    ends = Ends()
    ends.add(run, process.pid)
    ends.finish(GRACE)
    if run.code != 0:
        raise SystemExit(f"the undisturbed run failed ({run.code}): {last_line(logs / 'reference.err')}")
    return run


def disturbed(args: argparse.Namespace, out: Path, logs: Path) -> tuple[list[Start], list[Kill], float]:
    """The job under the killer, resumed until a start exits 0."""
    rng = random.Random(args.seed)
    low, high = args.interval
    began = time.monotonic()
    next_kill = began + rng.uniform(low, high)
    kind: Kind = rng.choice(args.kinds)
    starts: list[Start] = []
    kills: list[Kill] = []
    ends = Ends()
    while len(starts) < MAX_STARTS:
        # Resume what a start left (its job.json); a start killed before it wrote one starts afresh.
        start = Start(index=len(starts), resume=(out / "job.json").exists())
        starts.append(start)
        command = mine_command(args, out) + (["--resume"] if start.resume else [])
        process = launch(args, command, f"start{start.index}", logs)
        started = time.monotonic()
        print(f"start {start.index} ({'--resume' if start.resume else 'fresh'}): pid {process.pid}", flush=True)
        while process.poll() is None:
            now = time.monotonic()
            victims = targets(process.pid)[kind] if now >= next_kill else {}
            for pid in sorted(victims, key=lambda _: rng.random()):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue  # gone in between: the next one
                kills.append(Kill(round(now - began, 1), kind, pid, victims[pid][:100], start.index))
                start.killed = start.killed or kind == "driver"
                print(f"  {now - began:7.1f} s: killed {kind} {pid} {victims[pid][:60]}", flush=True)
                next_kill = now + rng.uniform(low, high)
                kind = rng.choice(args.kinds)
                break
            ends.sweep()
            time.sleep(POLL)
        start.seconds = round(time.monotonic() - started, 1)
        start.code = process.returncode
        if start.code != 0 and not start.killed:
            start.last_line = last_line(logs / f"start{start.index}.err")
            print(f"  start {start.index} exited {start.code} on its own: {start.last_line}", flush=True)
        ends.add(start, process.pid)  # the next start does not wait for it: a user would not either
        if start.code == 0:
            break
    seconds = round(time.monotonic() - began, 1)
    ends.finish(GRACE)
    return starts, kills, seconds


def compare(reference: Path, out: Path, shard_ids: list[str] | None = None) -> dict[str, dict[str, int]]:
    """Per table: the rows of each dataset and EXCEPT ALL both ways, over every column but `SERVED`;
    over the shards named in `shard_ids` (a run stopped early: its committed shards), else all."""
    con = duckdb.connect()

    def count(sql: str) -> int:
        row = con.execute(f"select count(*) from ({sql})").fetchone()
        assert row is not None
        return int(row[0])

    found = {}
    for name, schema in TABLES.items():
        columns = ", ".join(f'"{column}"' for column in schema.names if column not in SERVED)
        left, right = (
            f"select {columns} from read_parquet({shard_files(root, name, shard_ids)!r})" for root in (reference, out)
        )
        found[name] = {
            "reference_rows": count(left),
            "disturbed_rows": count(right),
            "reference_except_disturbed": count(f"{left} except all {right}"),
            "disturbed_except_reference": count(f"{right} except all {left}"),
        }
    return found


def shard_files(root: Path, table: str, shard_ids: list[str] | None) -> list[str]:
    if shard_ids is None:
        return sorted(map(str, root.glob(f"shards/*/{table}.parquet")))
    return [str(root / "shards" / shard_id / f"{table}.parquet") for shard_id in shard_ids]


def check(reference: Path, out: Path) -> tuple[dict[str, Any], list[str]]:
    """The finished disturbed dataset against the reference: what was compared, and what is wrong."""
    problems = []
    identity = json.loads((out / "job.json").read_text())["identity"]
    if identity != json.loads((reference / "job.json").read_text())["identity"]:
        problems.append("the reference was mined with other settings (the job identities differ)")
    try:
        assert_counts_add_up(json.loads((out / "manifest.json").read_text()), out)
    except AssertionError as error:
        problems.append(f"the disturbed run's counts do not add up: {error}")
    verified = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "verify", "--data", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    if verified.returncode != 0:
        problems.append(f"diffimax verify: {verified.stdout[-500:]}")
    tables = compare(reference, out)
    for name, counts in tables.items():
        if counts["reference_except_disturbed"] or counts["disturbed_except_reference"]:
            problems.append(f"{name}: rows differ {counts}")
        elif counts["reference_rows"] != counts["disturbed_rows"]:
            problems.append(f"{name}: {counts['reference_rows']} rows against {counts['disturbed_rows']}")
    found = {"verify": verified.stdout.strip().splitlines()[-1:], "tables": tables}
    return found, problems


def interval(text: str) -> tuple[float, float]:
    low, _, high = text.partition("-")
    try:
        pair = (float(low), float(high or low))
    except ValueError:
        pair = (0.0, -1.0)
    if not 0 < pair[0] <= pair[1]:
        raise argparse.ArgumentTypeError(f"invalid interval {text!r}: LOW-HIGH seconds, 0 < LOW <= HIGH")
    return pair


def kinds(text: str) -> list[Kind]:
    chosen = [kind.strip() for kind in text.split(",") if kind.strip()]
    if not chosen or any(kind not in KINDS for kind in chosen):
        raise argparse.ArgumentTypeError(f"invalid kinds {text!r}: a comma list of {', '.join(KINDS)}")
    return [kind for kind in KINDS if kind in chosen]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", type=Path, nargs="+", default=[INPUT], help="PGN files (default: player_a)")
    parser.add_argument("--games", type=int, default=2000, help="games read (mine --max-games)")
    parser.add_argument("--plies", default="10-16", help="ply window of the analysed positions")
    parser.add_argument("--nodes", type=int, default=1000, help="Stockfish nodes per search (its probe: a quarter)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shard-games", type=int, default=50, help="games per shard: what a resume skips")
    parser.add_argument("--interval", type=interval, default=(20.0, 60.0), help="seconds between kills, LOW-HIGH")
    parser.add_argument("--kinds", type=kinds, default=list(KINDS), help="what may be killed (comma list)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the intervals and the targets")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the source tree whose CLI runs")
    parser.add_argument("--work", type=Path, help="keep the datasets and logs here (default: a temporary directory)")
    parser.add_argument("--reference", type=Path, help="a finished undisturbed run of the same settings")
    parser.add_argument("--json", type=Path, help="write the report here too")
    args = parser.parse_args()
    args.checkout = args.checkout.resolve()

    work = (args.work or Path(tempfile.mkdtemp(prefix="soak-"))).resolve()
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    out = work / "disturbed"
    if out.exists():
        raise SystemExit(f"{out} exists: give another --work")
    command = " ".join(["diffimax", *mine_command(args, Path("OUT"))[3:]])
    report: dict[str, Any] = {
        "command": command,
        "checkout": str(args.checkout),
        "interval": args.interval,
        "kinds": args.kinds,
        "seed": args.seed,
    }
    print(json.dumps(report), flush=True)
    runs: list[Start] = []
    if args.reference:
        reference = args.reference.resolve()
        manifest = json.loads((reference / "manifest.json").read_text())
        report["reference"] = {"seconds": round(manifest["wall_seconds"], 1), "given": str(reference)}
    else:
        reference = work / "reference"
        runs.append(undisturbed(args, reference, logs))
        report["reference"] = {"seconds": runs[0].seconds, "ended_after": runs[0].ended_after}
    print(f"reference: {report['reference']}", flush=True)

    starts, kills, seconds = disturbed(args, out, logs)
    runs += starts
    problems: list[str] = []
    if starts[-1].code == 0:
        found, problems = check(reference, out)
        report |= found
    else:
        problems.append(f"the disturbed job did not finish in {len(starts)} starts")
    leftovers = {
        ("reference" if run.index < 0 else f"start{run.index}"): run.leftovers for run in runs if run.leftovers
    }
    if leftovers:
        problems.append(f"processes left behind: {leftovers}")

    def last_kill(start: Start) -> str:
        before = [kill for kill in kills if kill.start == start.index]
        return f"{before[-1].kind} ({before[-1].title[:40]})" if before else "none"

    report["disturbed"] = {
        "seconds": seconds,
        "starts": len(starts),
        "resumes": sum(start.resume for start in starts),
        "kills_by_kind": {kind: sum(kill.kind == kind for kill in kills) for kind in KINDS},
        # A start that failed on its own (not killed): its line, and the kill before it in that start.
        "exits_on_its_own": [
            {"start": start.index, "code": start.code, "line": start.last_line, "after_kill": last_kill(start)}
            for start in starts
            if start.code != 0 and not start.killed
        ],
        "start_seconds": [start.seconds for start in starts],
        "start_codes": [start.code for start in starts],
        # How long each session outlived its driver (its slowest process), in seconds.
        "sessions_ended_after": [start.ended_after for start in starts],
    }
    report |= {"leftovers": leftovers, "problems": problems, "work": str(work)}
    print(json.dumps(report, indent=2), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report | {"kills": [asdict(kill) for kill in kills]}, indent=2))
    if not args.work and not problems:
        shutil.rmtree(work, ignore_errors=True)
    if problems:
        raise SystemExit("soak run failed:\n  " + "\n  ".join(problems))


if __name__ == "__main__":
    main()
