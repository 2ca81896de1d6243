"""`magi mcp` over a memory with a bug planted in one method, for tests/test_mcp.py: a plain ``ValueError``
from inside the memory is a bug, and the server must not report it as the caller's invalid argument.

Run as ``python tests/mcp_bug_server.py DATA_DIR``; speaks MCP over stdio like ``magi mcp --no-background``.
"""

from __future__ import annotations

import sys

from magi_desktop.agents.mcp_server import build_server
from magi_desktop.core import Memory

BUG = "a planted bug: dict index out of order"


def _broken_working_memory(session_id: str) -> dict:
    raise ValueError(BUG)


def main(data_dir: str) -> int:
    with Memory.open(data_dir, embedder="hashing") as memory:
        memory.working_memory = _broken_working_memory      # type: ignore[method-assign]
        build_server(memory).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
