"""Export and import (issue 8): everything out as JSON Lines and back in, and a Markdown copy of the facts
and beliefs a person can read."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from ..export import ImportFailed, export_jsonl, open_private
from ..export_markdown import beliefs_file, evidence_counts, fact_files, index_file, read_facts, write_files
from ..forget_job import record_export
from ..import_report import ImportReport
from ..importer import import_jsonl
from ..store import Database
from ..store.entities import EntityLinker
from ..store.l1 import stored_secret
from .belief_review import BeliefReview
from .normalizer import Normalizer

__all__ = ["ImportFailed", "Transfer"]


class Transfer:
    def __init__(self, db: Database, *, lock: threading.Lock, linker: EntityLinker, normalize: Normalizer,
                 belief_review: BeliefReview, notify: Callable[[], None]) -> None:
        self.db = db
        self.lock = lock                    # the process lock: no background batch runs during an import
        self.linker = linker
        self.normalize = normalize          # its dedupe secret becomes the exported memory's
        self.belief_review = belief_review  # the beliefs the Markdown copy lists
        self.notify = notify                # the imported events wait for the background work

    def export_jsonl(self, out: str | os.PathLike | IO[str]) -> dict[str, int]:
        """Write everything the memory holds, with provenance, as JSON Lines (a header line, then one row per
        line) to a path (written whole or not at all, readable by the user only) or an open text stream.
        Returns the rows written per table. :meth:`import_jsonl` loads it into a new memory."""
        from ... import __version__

        if not isinstance(out, (str, os.PathLike)):
            return export_jsonl(self.db.reader(), out, app_version=__version__)
        target = Path(out)
        partial = target.with_name(target.name + ".partial")
        try:
            with open_private(partial) as handle:
                counts = export_jsonl(self.db.reader(), handle, app_version=__version__)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        self._log_export(target, "jsonl")
        return counts

    def export_markdown(self, directory: str | os.PathLike) -> list[Path]:
        """Write the facts agents saved, one Markdown file per scope × category with their evidence, and the
        current beliefs with their evidence counts (``beliefs.md``) into ``directory``; same memory, same
        files. Returns the files written."""
        conn = self.db.reader()
        files = fact_files(read_facts(conn))
        beliefs = {category: self.belief_review.beliefs(category, state="current", limit=1_000_000)
                   for category in ("assertions", "relationships", "facts")}
        files["beliefs.md"] = beliefs_file(beliefs, evidence_counts(conn))
        files["index.md"] = index_file(files)
        written = write_files(Path(directory), files)
        self._log_export(Path(directory), "markdown")
        return written

    def _log_export(self, path: Path, fmt: str) -> None:
        """Remember where an export went: a later forget's receipt lists the exports that may still hold
        what it removed (the memory cannot reach into them)."""
        with self.db.transaction() as conn:
            record_export(conn, str(Path(path).resolve()), fmt)

    def import_jsonl(self, source: str | os.PathLike | IO[bytes]) -> ImportReport:
        """Load an export made by :meth:`export_jsonl` into this memory, which must be empty, in ONE
        transaction: :class:`ImportFailed` (naming the line and field) leaves the memory untouched; an
        export from a newer schema is refused. The events go through the write path again (every derived
        value made anew), facts are re-checked by the quote gate, reviews wait for the rebuilt beliefs; L2,
        L3 and L4 are not loaded but rebuilt — call ``Memory.process_pending`` and ``Memory.run_due`` (as after
        ingest). The report says what was taken and every value changed or row dropped."""
        handle = open(source, "rb") if isinstance(source, (str, os.PathLike)) else source  # noqa: SIM115
        try:
            with self.lock:
                try:
                    with self.db.transaction() as conn:
                        report = import_jsonl(conn, handle, templates=self.normalize.templates, link=self.linker.link,
                                              key_secret=self.normalize.key_secret,
                                              user_id=self.normalize.user_id)
                finally:
                    self.linker.reset()      # ids it cached may be rolled back, or now name other rows
                secret = stored_secret(self.db.reader(), "idempotency_secret")
                if secret is not None:
                    self.normalize.adopt_secret(secret)
        finally:
            if handle is not source:
                handle.close()
        self.notify()
        return report
