"""The ``magi`` command line (architecture §12): the entry point and how errors end a command. Each command
group is a module of its own (``ingest``, ``query``, ``status``, ``collectors``, ``forgetting``, ``transfer``,
``serving``); the parser is ``parser``, what they print goes through ``output``."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

from . import collectors, forgetting, ingest, query, serving, status, transfer
from .output import LockWaitNotice, ShownFormatter, data_dir, shown_output
from .parser import build_parser

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--probe-qt"]:          # `magi doctor` runs this in a child process (works frozen too)
        from ..ui.qt import PYSIDE_VERSION

        print(PYSIDE_VERSION)
        return 0
    args = build_parser().parse_args(argv)
    handler = logging.StreamHandler()
    handler.setFormatter(ShownFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, handlers=[handler])
    if data_dir(args) is not None:
        os.environ["MAGI_DATA_DIR"] = str(data_dir(args))
    from ..core.store.connection import on_lock_wait

    on_lock_wait(LockWaitNotice())         # waiting for another program's write lock is shown, not raised
    handlers = {"ingest": ingest.cmd_ingest, "query": query.cmd_query, "status": status.cmd_status,
                "doctor": status.cmd_doctor, "plugins": collectors.cmd_plugins, "collect": collectors.cmd_collect,
                "forget": forgetting.cmd_forget, "redact": forgetting.cmd_redact, "export": transfer.cmd_export,
                "import": transfer.cmd_import, "restore": transfer.cmd_restore, "mcp": serving.cmd_mcp,
                "app": serving.cmd_app, None: serving.cmd_app}
    from ..core import InvalidInput, MemoryUnavailable
    from ..core.store.connection import OperationalError, is_busy

    try:
        with shown_output(args.command):
            return handlers[args.command](args)
    except MemoryUnavailable as exc:
        print(f"magi: {exc}\n(run `magi doctor` for a full check)", file=sys.stderr)
        return 2
    except InvalidInput as exc:         # the user's argument (a plain ValueError is a bug: it keeps its traceback)
        print(f"magi {args.command or 'app'}: {exc}", file=sys.stderr)
        return 2
    except OperationalError as exc:
        if not is_busy(exc):
            raise
        print("magi: the memory is busy (another program held its lock); nothing more was written — try again",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
