#!/usr/bin/env bash
# Build the one-folder Linux bundle dist/magi-desktop/ and smoke-test it.
#   ./install.sh && packaging/build.sh
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/pip install -q "pyinstaller==6.22.3"
.venv/bin/pyinstaller packaging/magi_desktop.spec --noconfirm --distpath dist --workpath build/pyinstaller
smoke="$(mktemp -d)"
MAGI_DATA_DIR="$smoke" dist/magi-desktop/magi-desktop doctor
MAGI_DATA_DIR="$smoke" dist/magi-desktop/magi-desktop plugins
echo "built dist/magi-desktop ($(du -sh dist/magi-desktop | cut -f1)); smoke test passed"
