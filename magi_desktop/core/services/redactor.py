"""Re-redaction: apply the current secret-redaction rules to what is stored (issue 16)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from .. import reredact
from ..redact import RuleSet
from ..scrub import scrub
from ..store import Database, erasure
from ..store import reredaction as redaction_rows
from ..store.connection import Connection, write_transaction
from ..store.entities import EntityLinker
from .normalizer import Normalizer

SCRUB_TRIES = 10
SCRUB_PAUSE_SECONDS = 0.5


class Redactor:
    def __init__(self, db: Database, *, lock: threading.Lock, linker: EntityLinker, normalize: Normalizer,
                 notify: Callable[[], None]) -> None:
        self.db = db
        self.lock = lock                # the process lock: no background batch meanwhile
        self.linker = linker            # names it cached may be the old ones
        self.normalize = normalize      # the rules ingest redacts with, and the dedupe secret of the events
        self.notify = notify            # changed events wait to be embedded again

    @property
    def rules(self) -> RuleSet:
        """The rules ingest redacts with (``Memory.open(redaction=...)``; an older set in tests)."""
        return self.normalize.rules

    def redaction_status(self) -> dict[str, Any]:
        """The rules version in force, the one the stored data was redacted with, whether they are the same
        (``current``), the command to run when not (``hint``) and the last run's receipt."""
        return reredact.status(self.db.reader(), self.rules)

    def redact_stored(self, dry_run: bool = False) -> dict[str, Any]:
        """Apply the current rules to everything stored that holds text — events (content, metadata, item
        and session ids, their full-text rows; changed events are embedded again), runtime traces and every
        derived table — in short write transactions; then scrub (secure_delete, FTS optimize, WAL
        checkpoint) and replace the older backups, which still hold the old text. Returns the receipt
        (rows changed per table, replacements per rule family; kept in ``redaction_receipts``).
        ``dry_run``: count what would change and write nothing."""
        @contextlib.contextmanager
        def writer() -> Iterator[Connection]:
            with self.db.writer() as conn, erasure.secure_writes(conn):
                yield conn

        with self.lock:
            report = reredact.run(writer, self.db.reader(), rules=self.rules, key_secret=self.normalize.key_secret,
                                  dry_run=dry_run)
            if not dry_run:
                self.linker.reset()          # names it cached may be the old ones
                if report.changed:
                    with self.db.writer() as conn:
                        erasure.scrub_rewritten_text(conn)
        if not dry_run and report.changed:
            # The rest of what forget's scrub does: older backups replaced, what `magi restore` kept aside
            # and collectors' temp copies deleted, the write-ahead log truncated (retried while a reader
            # holds an older snapshot; "pending" if it still does).
            scrubbed = scrub(self.db, time.time())
            for _ in range(SCRUB_TRIES):
                if scrubbed.done:
                    break
                time.sleep(SCRUB_PAUSE_SECONDS)
                scrubbed = scrub(self.db, time.time())
            report.backups_replaced = scrubbed.backups_replaced
            report.scrub = "done" if scrubbed.done else "pending"
            with self.db.transaction() as conn:
                redaction_rows.note_backups_replaced(conn, report.receipt_id, report.backups_replaced)
            self.notify()                      # changed events wait to be embedded again
        return report.to_dict()

    def redaction_receipts(self, limit: int = 20) -> list[dict[str, Any]]:
        keys = ("receipt_id", "started_at", "finished_at", "rules_from", "rules_to", "rows_scanned", "changed",
                "families", "backups_replaced")
        rows = redaction_rows.receipts(self.db.reader(), limit)
        return [dict(zip(keys, (*r[:6], json.loads(r[6]), json.loads(r[7]), r[8]), strict=True)) for r in rows]


def note_rules(conn: Connection, rules: RuleSet) -> None:
    """At open: record the rules version of a new memory (an existing one without a version predates them)."""
    with write_transaction(conn):
        reredact.note_rules_at_open(conn, rules)
