"""The ``magi`` argument parser: one sub-command per command module."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import __version__
from ..agents.http import DEFAULT_PORT as HTTP_PORT
from .query import modes


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir", type=Path, default=argparse.SUPPRESS,
        help="data folder (default: $MAGI_DATA_DIR or the platform's user data folder)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="magi", description="Magi Desktop — local-first memory for AI agents.")
    parser.add_argument("--version", action="version", version=f"magi-desktop {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    add_data_dir(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    app = commands.add_parser("app", help="start the desktop application (the default)")
    add_data_dir(app)

    ingest = commands.add_parser("ingest", help="ingest payloads from a JSON Lines file ('-' for stdin)")
    add_data_dir(ingest)
    ingest.add_argument("file", help="JSONL file: one payload (architecture §3.1) per line")
    ingest.add_argument("--batch-size", type=int, default=500, help="payloads per transaction (default 500)")
    ingest.add_argument("--no-embed", action="store_true",
                        help="leave embedding and L2 projection to the app's background worker")

    query = commands.add_parser("query", help="ask the memory a question; prints the evidence pack")
    add_data_dir(query)
    query.add_argument("text", help="the question")
    query.add_argument("--mode", help="query mode (default: chosen by rules): " + ", ".join(modes()))
    query.add_argument("--now", help="answer as of this ISO-8601 time (default: now)")
    query.add_argument("--limit", type=int, default=10, help="findings at most (default 10)")
    query.add_argument("--all", action="store_true", dest="search_all",
                       help="search the cold tier too (old events L3 has summarised; searched anyway when the "
                            "question's window is that old or nothing else answers)")
    query.add_argument("--json", action="store_true", help="print the pack as JSON")

    status = commands.add_parser("status", help="show what the memory holds and what is queued")
    add_data_dir(status)
    status.add_argument("--json", action="store_true", help="print JSON")

    doctor = commands.add_parser("doctor", help="check SQLite, FTS5, sqlite-vec, the model and the data folder")
    add_data_dir(doctor)
    doctor.add_argument("--json", action="store_true", help="print JSON")

    plugins = commands.add_parser("plugins", help="list plugins (name, version, hooks), their collectors with their "
                                                  "health, and errors")
    add_data_dir(plugins)
    plugins.add_argument("--release", metavar="NAME",
                         help="release collector NAME from quarantine (every process runs it again)")
    plugins.add_argument("--json", action="store_true", help="print JSON")

    collect = commands.add_parser("collect", help="run the collectors enabled in collectors.json once, now")
    add_data_dir(collect)
    collect.add_argument("--json", action="store_true", help="print JSON")
    forget = commands.add_parser("forget", help="remove events everywhere (and what was derived from them), "
                                                "with a receipt; criteria combine")
    add_data_dir(forget)
    forget.add_argument("--event", action="append", default=[], help="an event id (repeatable)")
    forget.add_argument("--item", action="append", default=[], help="a source item id (repeatable)")
    forget.add_argument("--entity", help="every event linked to this entity (name or alias) or saying its name")
    forget.add_argument("--source", help="every event of this source (e.g. chrome)")
    forget.add_argument("--from", dest="start", help="from this ISO-8601 time")
    forget.add_argument("--to", dest="end", help="until this ISO-8601 time")
    forget.add_argument("--dry-run", action="store_true", help="only show what would go; remove nothing")
    forget.add_argument("--yes", action="store_true",
                        help="forget without asking (needed when there is no terminal to ask in, e.g. a script)")
    forget.add_argument("--json", action="store_true", help="print the receipt (or the dry run) as JSON")

    redact = commands.add_parser("redact", help="apply the current secret-redaction rules to everything stored "
                                                "(events, indexes, derived rows, backups), with a receipt")
    add_data_dir(redact)
    redact.add_argument("--dry-run", action="store_true", help="only count what would change; write nothing")
    redact.add_argument("--json", action="store_true", help="print the receipt as JSON")

    export = commands.add_parser("export", help="write everything the memory holds to a JSON Lines file (for "
                                                "`magi import`), or its facts and beliefs as Markdown files")
    add_data_dir(export)
    export.add_argument("--format", choices=("jsonl", "markdown"), default="jsonl",
                        help="jsonl: everything, with provenance (default); markdown: one file per scope × "
                             "category of the saved facts, and beliefs.md")
    export.add_argument("--out", required=True, help="jsonl: a file ('-' for stdout); markdown: a folder")

    load = commands.add_parser("import", help="load a `magi export` JSONL file into a new, empty memory "
                                              "(all or nothing)")
    add_data_dir(load)
    load.add_argument("file", help="the export ('-' for stdin)")
    load.add_argument("--no-embed", action="store_true",
                      help="leave re-embedding and rebuilding L2–L4 to the app's background worker")
    load.add_argument("--json", action="store_true", help="print the import report as JSON")

    restore = commands.add_parser("restore", help="replace the memory with an automatic backup (a damaged memory: "
                                                  "the newest sound one); the replaced file is kept aside")
    add_data_dir(restore)
    restore.add_argument("backup", nargs="?", help="a backup file, or its name in backups/ (default: the newest "
                                                   "that passes the integrity check)")
    restore.add_argument("--list", action="store_true", help="list the automatic backups, newest first")
    restore.add_argument("--json", action="store_true", help="print JSON")

    mcp = commands.add_parser("mcp", help="serve the memory to agents over MCP (stdio, or HTTP with a token); "
                                          "safe beside the app")
    add_data_dir(mcp)
    mcp.add_argument("--no-background", action="store_true",
                     help="leave embedding, L2 and summaries to the running app (default: do them here too)")
    mcp.add_argument("--transport", choices=("stdio", "streamable-http"), default="stdio",
                     help="stdio (default: the client starts the server) or streamable-http (a server clients "
                          "connect to, with a bearer token)")
    mcp.add_argument("--host", default="127.0.0.1", help="HTTP: the address to bind (default 127.0.0.1, this "
                                                         "machine only)")
    mcp.add_argument("--port", type=int, default=HTTP_PORT, help=f"HTTP: the port (default {HTTP_PORT})")
    mcp.add_argument("--allow-remote", action="store_true",
                     help="HTTP: allow a --host other machines can reach (give --tls-cert and --tls-key too)")
    mcp.add_argument("--tls-cert", metavar="FILE", help="HTTP: serve HTTPS with this certificate (PEM)")
    mcp.add_argument("--tls-key", metavar="FILE", help="HTTP: the certificate's private key (PEM)")
    mcp.add_argument("--allowed-origin", action="append", default=[], metavar="ORIGIN",
                     help="HTTP: a browser origin allowed to call (repeatable; default: the server's own address)")
    mcp.add_argument("--show-token", action="store_true", help="print the HTTP bearer token (made on first use) "
                                                               "and where it is kept, then exit")
    mcp.add_argument("--rotate-token", action="store_true",
                     help="replace the HTTP bearer token (clients using the old one are refused), print it, exit")
    return parser
