"""Agent interfaces: the MCP server (``magi mcp``) over the public ``Memory`` API. No Qt here.

``magi_desktop.agents.mcp_server`` imports the ``mcp`` SDK; nothing else in the package needs it.
"""
