#!/usr/bin/env bash
# One-command set-up and run on a fresh machine (the README's two commands):
#   bash deploy/local.sh demo   # install, then run the main job on the bundled sample
#   bash deploy/local.sh test   # install, then run the whole test suite
# Installs what is missing and nothing else: a virtualenv in .venv with the project and its
# dev tools, and Debian's stockfish (at /usr/games/stockfish) when apt-get is available.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv

need_stockfish() {
    command -v stockfish >/dev/null 2>&1 || [ -x /usr/games/stockfish ]
}

install_stockfish() {
    if need_stockfish; then return; fi
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "== installing stockfish (apt-get)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stockfish >/dev/null
    else
        echo "== stockfish not found and apt-get unavailable: UCI tests will be skipped" >&2
    fi
}

install_python() {
    if [ ! -x "$VENV/bin/python" ]; then
        echo "== creating $VENV"
        "$PYTHON" -m venv "$VENV"
    fi
    # Reinstall only when pyproject.toml changed since the last install.
    stamp="$VENV/.installed-$(sha1sum pyproject.toml | cut -c1-12)"
    if [ ! -f "$stamp" ]; then
        echo "== installing diffimax and its dependencies"
        "$VENV/bin/python" -m pip install -q --upgrade pip
        "$VENV/bin/python" -m pip install -q -e ".[dev]"
        rm -f "$VENV"/.installed-*
        touch "$stamp"
    fi
}

engine() {
    if need_stockfish; then echo stockfish; else echo native; fi
}

case "${1:-}" in
    demo)
        install_stockfish
        install_python
        shift
        ENGINE=$(engine)
        echo "== DiffiMax on the bundled sample positions (engine: $ENGINE)"
        grep -v '^#' pipeline/samples/positions.tsv | while IFS=$'\t' read -r name moves fen; do
            echo
            echo "#### $name"
            echo "#### 1. $moves"
            "$VENV/bin/diffimax" explain "$fen" --engine "$ENGINE" "$@"
        done
        ;;
    test)
        install_stockfish
        install_python
        shift
        "$VENV/bin/python" -m pytest "$@"
        ;;
    *)
        echo "usage: bash deploy/local.sh demo|test [extra arguments]" >&2
        exit 2
        ;;
esac
