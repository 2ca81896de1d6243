"""``magi app`` and ``magi mcp``: the long-running commands."""

from __future__ import annotations

import argparse
import sys

from .output import data_dir


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..agents.mcp_server import serve
    from ..core.paths import database_path

    if args.show_token or args.rotate_token:
        from ..agents.http import http_token

        token = http_token(database_path(data_dir(args)).parent, rotate=args.rotate_token)
        print(token.value)
        print(f"{'new token, ' if args.rotate_token else ''}kept in {token.kept_in}; send it as "
              "'Authorization: Bearer <token>'", file=sys.stderr)
        return 0
    if args.transport == "stdio":
        return serve(data_dir(args), background=not args.no_background)
    return _serve_http(args)


def _serve_http(args: argparse.Namespace) -> int:
    from ..agents.http import HttpOptions, http_token, uvicorn_server
    from ..agents.mcp_server import serve
    from ..core import InvalidInput
    from ..core.paths import database_path

    options = HttpOptions(host=args.host, port=args.port, allow_remote=args.allow_remote, certfile=args.tls_cert,
                          keyfile=args.tls_key, origins=tuple(args.allowed_origin))
    try:
        options.check()
    except InvalidInput as exc:
        print(f"magi mcp: {exc}", file=sys.stderr)
        return 2
    token = http_token(database_path(data_dir(args)).parent)

    def run(server) -> None:
        print(f"magi mcp: serving {options.url} — bearer token kept in {token.kept_in} "
              "(magi mcp --show-token prints it); Ctrl-C stops", file=sys.stderr, flush=True)
        uvicorn_server(server, token, options).run()

    return serve(data_dir(args), background=not args.no_background, run=run)


def cmd_app(args: argparse.Namespace) -> int:
    from ..ui.app import run_app

    return run_app(data_dir(args))
