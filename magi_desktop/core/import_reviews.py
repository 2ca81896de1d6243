"""The user's reviews through an import (issue 16): from local ids to natural keys, then replayed.

An exported review names its belief by the exporting memory's ids (``assertion:12``, an edge's triple
id made of entity ids, an entity id). The export also holds that memory's L2 rows, which the import
does not load; it reads them here only to turn those ids into natural keys — an entity's name key and
type, an edge's subject, predicate and object, an assertion's entity, trait and value — and queues the
review in ``review_replays``, which the L2 worker applies once the rebuild has reached the moment the
user made it (:mod:`.l2.replay`). A review whose belief is not in the export, or that was undone, is
dropped and reported; so is a correction whose own statement was not imported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from .import_checks import integer, json_of, number, text
from .import_report import ImportReport
from .l2 import jobs
from .l2.replay import ACTIONS
from .store import imports
from .store.connection import Connection

Rows = Iterable[Mapping[str, Any]]


class ExportedL2:
    """The exporting memory's L2 ids, read from its rows, for translating reviews only."""

    def __init__(self) -> None:
        self.entities: dict[int, list[str]] = {}              # id -> [name key, type]
        self.edges: dict[str, tuple[int, str, int]] = {}      # triple id -> (subject, predicate, object)
        self.assertions: dict[int, tuple[int, str, str]] = {}  # id -> (entity, trait, value)

    def read(self, table: str, rows: Rows) -> None:
        for row in rows:
            if table == "entity_catalog" and integer(row.get("entity_id"), 1) and text(row.get("name_key"), 1000) \
                    and text(row.get("entity_type"), 64):
                self.entities[row["entity_id"]] = [row["name_key"], row["entity_type"]]
            elif table == "kg_edges" and text(row.get("triple_id"), 64) and integer(row.get("subject_id"), 1) \
                    and integer(row.get("object_id"), 1) and text(row.get("predicate"), 64):
                self.edges[row["triple_id"]] = (row["subject_id"], row["predicate"], row["object_id"])
            elif table == "tom_trait_assertions" and integer(row.get("assertion_id"), 1) \
                    and integer(row.get("entity_id"), 1) and text(row.get("trait"), 64) \
                    and text(row.get("value"), 2000):
                self.assertions[row["assertion_id"]] = (row["entity_id"], row["trait"], row["value"])

    def target(self, kind: str, row_key: str, detail: Mapping[str, Any]) -> dict[str, Any] | None:
        """The natural key of a reviewed belief, or None when the export does not hold it."""
        if kind == "assertion" and row_key.isdigit() and int(row_key) in self.assertions:
            entity, trait, value = self.assertions[int(row_key)]
            return {"kind": kind, "entity": self.entities[entity], "trait": trait, "value": value} \
                if entity in self.entities else None
        if kind == "edge" and row_key in self.edges:
            subject, predicate, obj = self.edges[row_key]
            if subject in self.entities and obj in self.entities:
                return {"kind": kind, "subject": self.entities[subject], "predicate": predicate,
                        "object": self.entities[obj]}
        if kind == "entity" and row_key.isdigit():
            merged = detail.get("merged")
            keep = self.entities.get(int(row_key))
            drop = self.entities.get(merged) if isinstance(merged, int) else None
            return {"kind": kind, "keep": keep, "drop": drop} if keep and drop else None
        return None


def valid_target(target: Any) -> bool:
    """A natural key as :mod:`.l2.replay` reads it."""
    def entity(value: Any) -> bool:
        return isinstance(value, list) and len(value) == 2 and all(text(v, 1000) for v in value)

    if not isinstance(target, dict):
        return False
    if target.get("kind") == "assertion":
        return entity(target.get("entity")) and bool(text(target.get("trait"), 64)) and bool(text(target.get("value"),
                                                                                                   2000))
    if target.get("kind") == "edge":
        return entity(target.get("subject")) and entity(target.get("object")) \
            and bool(text(target.get("predicate"), 64))
    return target.get("kind") == "entity" and entity(target.get("keep")) and entity(target.get("drop"))


class ReviewLoader:
    def __init__(self, conn: Connection, report: ImportReport, exported: ExportedL2):
        self.conn, self.report, self.exported = conn, report, exported

    def _correction(self, detail: Mapping[str, Any]) -> dict[str, Any] | None:
        """A correction's value and its own statement (an imported event), or None."""
        value, rowid = text(detail.get("value"), 2000), integer(detail.get("event_rowid"), 1)
        if value is None or rowid is None or not imports.is_user_chat_statement(self.conn, rowid):
            return None
        return {"value": value, "event_rowid": rowid}

    def _queue(self, action: str, target: dict[str, Any], detail: dict[str, Any], at: float) -> None:
        imports.queue_replay(self.conn, action, json.dumps(target, ensure_ascii=False), json.dumps(detail), at)

    def add_review(self, row: Mapping[str, Any]) -> None:
        """A row of ``user_reviews``: queued by natural keys, or dropped and reported."""
        example = f"review:{row.get('review_id')}"
        action, kind, row_key = row.get("action"), row.get("kind"), text(row.get("row_key"), 64)
        detail = json_of(row.get("detail_json"), dict)
        at = number(row.get("created_at"))
        if action not in ACTIONS or kind not in ("assertion", "edge", "entity") or row_key is None or detail is None \
                or at is None or (action == "merge") != (kind == "entity"):
            return self.report.drop("user_reviews", "invalid_review", example)
        if row.get("undone_at") is not None:
            return self.report.drop("user_reviews", "undone by the user: nothing to apply", example)
        target = self.exported.target(kind, row_key, detail)
        if target is None:
            return self.report.drop("user_reviews", "names no belief the export holds", example)
        replay_detail: dict[str, Any] = {}
        if action == "correct":
            replay_detail = self._correction(detail) or {}
            if not replay_detail:
                return self.report.drop("user_reviews", "the correction's own statement was not imported", example)
        self._queue(action, target, replay_detail, at)
        self.report.took("review_replays")

    def add_replay(self, row: Mapping[str, Any]) -> None:
        """A row of ``review_replays`` an earlier import left waiting when this memory was exported."""
        example = f"replay:{row.get('replay_id')}"
        if row.get("state") != "pending":
            return self.report.drop("review_replays", "decided before the export (an applied one travels as its "
                                                      "review)", example)
        target, detail = json_of(row.get("target_json"), dict), json_of(row.get("detail_json"), dict)
        at = number(row.get("reviewed_at"))
        if row.get("action") not in ACTIONS or not valid_target(target) or detail is None or at is None or \
                (row["action"] == "merge") != (target["kind"] == "entity"):
            return self.report.drop("review_replays", "invalid_review", example)
        if row["action"] == "correct":
            detail = self._correction(detail)
            if detail is None:
                return self.report.drop("review_replays", "the correction's own statement was not imported", example)
        else:
            detail = {}
        self._queue(row["action"], target, detail, at)
        self.report.took("review_replays")

    def finish(self, now: float) -> None:
        """Each replay waits for the events recorded before its review; a correction's own statement is
        not projected (the correction writes its belief, as in the viewer)."""
        for replay_id, at, detail in imports.pending_replay_rows(self.conn):
            # The first event recorded after the review; none: the first one stored after this import.
            imports.hold_replay(self.conn, replay_id, imports.first_event_ingested_after(self.conn, at))
            rowid = json.loads(detail).get("event_rowid")
            if rowid is not None:
                jobs.mark_done(self.conn, [rowid], now)
