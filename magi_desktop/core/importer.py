"""Import an export into an empty memory (issues 8 and 16): checked first, then loaded in ONE transaction,
trusting nothing the export derived.

The file is checked whole before anything is written (:func:`~.export.check_file`: a bad line is named
with its number and field; a newer schema is refused). Then, in the caller's transaction:

1. the L1 events and runtime traces go through the write path again (:mod:`.import_events`): every
   derived column is made again from the payload fields they stored, never read;
2. the user's state — session generations, extraction marks, facts, forget receipts — is checked value
   by value and reference by reference (:mod:`.import_state`, :mod:`.import_facts`: each fact re-checked
   by the quote gate or the extraction validator);
3. the user's reviews are queued by natural keys, to be applied to the rebuilt L2 (:mod:`.import_reviews`);
4. everything else (L2, L3, L4, queues, counters) is left for the workers, queued as a fresh ingest
   queues it: ``process_pending`` and ``run_due`` rebuild it.

:class:`~.import_report.ImportReport` says what was taken per table, what was rebuilt instead, and every
value changed and row dropped, by table, column and reason. A fatal inconsistency (an id used twice)
raises :class:`~.export.ImportFailed` naming the line and field; the caller rolls back.
"""

from __future__ import annotations

import time
from typing import IO

from .export import ImportFailed, check_file, table_rows
from .export_schema import IMPORTED, REBUILT, TRANSLATION_ONLY, exported_tables
from .import_events import EventLoader, Failed, Link
from .import_facts import FactLoader
from .import_report import ImportReport
from .import_reviews import ExportedL2, ReviewLoader
from .import_state import StateLoader
from .render import TemplateRegistry
from .store import event_index, imports
from .store.connection import Connection
from .store.exports import schema_version
from .store.queue import EMBEDDING_JOBS, L2_PROJECTION_JOBS

# What the importing memory writes itself when it opens, so its presence does not make it "not empty".
_OWN_ROWS = ("memory_meta",)


def _refuse_if_not_empty(conn: Connection) -> None:
    holding = [t.name for t in exported_tables(conn) if t.name not in _OWN_ROWS
               and imports.has_rows(conn, t.name)]
    if holding:
        raise ImportFailed(f"this memory is not empty ({', '.join(holding[:3])}{' …' if len(holding) > 3 else ''} "
                           "hold rows); import into a new data folder — merging is not supported")


def import_jsonl(conn: Connection, handle: IO[bytes], *, templates: TemplateRegistry, link: Link,
                 key_secret: bytes, user_id: str, now: float | None = None) -> ImportReport:
    """Load an export into the empty memory behind ``conn``, inside the caller's write transaction.

    ``handle`` is a seekable binary file; ``templates`` render the events as ingest does; ``link`` ties
    stored events to entities (the memory's entity linker). Raises :class:`ImportFailed` (naming the line
    and field when the file is at fault); the caller rolls back, so nothing is written.
    """
    now = time.time() if now is None else now
    known = {t.name: t for t in exported_tables(conn)}
    _refuse_if_not_empty(conn)
    handle.seek(0)
    checked = check_file(handle, schema_version(conn), known)
    header = checked.header
    report = ImportReport(header["schema_version"], header.get("exported_at"))
    listed = {t["name"] for t in header["tables"] if t["rows"]}
    report.rebuilt = {name: REBUILT.get(name, "not imported: made afresh by this memory")
                      for name in sorted(listed - set(IMPORTED))}
    imports.defer_foreign_keys(conn)
    events = EventLoader(conn, report, templates, link, key_secret=key_secret, user_id=user_id)
    state, facts = StateLoader(conn, report), FactLoader(conn, report)
    exported = ExportedL2()
    for table in TRANSLATION_ONLY:
        exported.read(table, (row for _, row in table_rows(handle, checked, table)))
    reviews = ReviewLoader(conn, report, exported)
    per_row = {"memory_meta": state.meta, "chat_sessions": state.session, "fact_extractions": state.extraction,
               "chat_extraction": state.message_mark, "memory_facts": facts.add, "forget_receipts": state.receipt,
               "user_reviews": reviews.add_review, "review_replays": reviews.add_replay}
    try:
        for table in IMPORTED:
            for line, row in table_rows(handle, checked, table):
                if table in ("fact_events", "runtime_traces"):
                    events.add(table, line, row)
                else:
                    per_row[table](row)
            if table == "runtime_traces":
                events.finish()
    except Failed as exc:
        raise ImportFailed(exc.reason, exc.line, exc.field) from None
    facts.finish()
    reviews.finish(now)
    # The event index is written by store/l1.py per batch; made once more over the whole import, so each
    # turn's context (the turn before it) is the one the finished table gives, as Memory.reindex does.
    event_index.reindex_all(conn)
    problem = imports.foreign_key_problem(conn)
    if problem:                 # every reference was checked above: this is a bug here, not the file
        raise ImportFailed(f"the import left a row of {problem[0]} (rowid {problem[1]}) referring to a missing row "
                           f"of {problem[2]}; please report it")
    report.queued = _queued(conn)
    return report


def _queued(conn: Connection) -> dict[str, int]:
    queued = {"embedding": sum(EMBEDDING_JOBS.counts(conn).values()),
              "l2_projection": L2_PROJECTION_JOBS.counts(conn).get("pending", 0),
              "fact_extraction": imports.unextracted_generations(conn),
              "review_replays": imports.pending_replays(conn)}
    return {name: n for name, n in queued.items() if n}
