"""``magi app`` and ``magi mcp``: the long-running commands."""

from __future__ import annotations

import argparse

from .output import data_dir


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..agents.mcp_server import serve

    return serve(data_dir(args), background=not args.no_background)


def cmd_app(args: argparse.Namespace) -> int:
    from ..ui.app import run_app

    return run_app(data_dir(args))
