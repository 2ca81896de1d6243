"""How an MCP client starts ``magi mcp``: the command and the ``mcpServers`` JSON to paste into its
configuration (Claude Desktop, Cursor, VS Code, …), as Settings → Agents shows it. No Qt, no MCP SDK.

The command is this installation's own interpreter (or the frozen executable), not a ``magi`` found
on PATH — MCP clients often start servers with a bare environment — and the data folder is always
named, so the server uses exactly the app's memory whatever the client's environment says.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SERVER_NAME = "magi-desktop"          # the server's name, and its key in a client's mcpServers


def server_command(data_folder: Path) -> list[str]:
    """The command line that runs the MCP server on ``data_folder``."""
    base = [sys.executable] if getattr(sys, "frozen", False) else [sys.executable, "-m", "magi_desktop.cli"]
    return [*base, "mcp", "--data-dir", str(data_folder)]


def client_config(data_folder: Path) -> dict[str, Any]:
    """The ``mcpServers`` entry an MCP client needs to start this memory's server."""
    command, *args = server_command(data_folder)
    return {"mcpServers": {SERVER_NAME: {"command": command, "args": args}}}


def client_config_json(data_folder: Path) -> str:
    return json.dumps(client_config(data_folder), indent=2, ensure_ascii=False)
