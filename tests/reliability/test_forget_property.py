"""Issue 16, the class of defect 3: forget leaves no byte anywhere, under any concurrent reader.

Hypothesis draws a history — chat turns and sensor events each carrying a unique marker word (some
named as an entity), the background work (embedding, L2 projection, snapshots), summaries, backups, and
a reader holding a read transaction at random moments, in another process or in another connection of
this one — then forgets some events (by item id or by entity name), maybe while the reader still holds
its snapshot and while more is ingested. Once the reader lets go and the scrub is ``done``: no file under
the data folder (database, WAL, backups, temp copies) holds any forgotten marker as raw bytes, in UTF-8 or
UTF-16, and every kept marker is still found and answered.

Cases per run: ``MAGI_FORGET_EXAMPLES`` (default 25); each builds a fresh memory.
"""
# Raw SQL left: a second connection holding a read snapshot while forget runs.

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import sqlean
from hypothesis import event, given, settings
from hypothesis import strategies as st

from magi_desktop.core import Memory
from magi_desktop.core.store.search import match_count

from .fuzzing import count, files_holding, integrity_ok

HOLDER = Path(__file__).resolve().parent.parent / "lock_holder.py"
T0 = 1_764_000_000.0
# Letters the porter stemmer leaves alone (no vowel, no final s / y): the index keeps the marker as is, so
# a byte search for it finds every copy the full-text index could hold.
_LETTERS = "bcdfghjkmnpqrtvwxz"
markers = st.lists(st.text(_LETTERS, min_size=8, max_size=8).map(lambda s: "zq" + s), min_size=12, max_size=12,
                   unique=True)

_event = st.tuples(st.sampled_from(["user", "assistant", "sensor"]), st.booleans())    # kind, named as entity
_op = st.one_of(
    st.tuples(st.just("ingest"), _event),
    st.tuples(st.just("pending"), st.none()),
    st.tuples(st.just("run_due"), st.none()),
    st.tuples(st.just("backup"), st.none()),
    st.tuples(st.just("hold"), st.sampled_from(["process", "connection"])),
    st.tuples(st.just("release"), st.none()),
)


class Readers:
    """A reader in another process (a long-lived child) or another connection of this one."""

    def __init__(self):
        self.child = subprocess.Popen([sys.executable, str(HOLDER), "-", "serve"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
        self.connection: sqlean.Connection | None = None
        self.child_holds = False

    def hold(self, where: str, db: Path) -> None:
        if where == "process" and not self.child_holds:
            self.child.stdin.write(f"hold {db}\n")
            self.child.stdin.flush()
            assert self.child.stdout.readline().strip() == "held"
            self.child_holds = True
        elif where == "connection" and self.connection is None:
            self.connection = sqlean.connect(str(db), isolation_level=None)
            self.connection.execute("BEGIN")
            self.connection.execute("SELECT count(*) FROM fact_events").fetchone()

    @property
    def holding(self) -> bool:
        return self.child_holds or self.connection is not None

    def release(self) -> None:
        if self.child_holds:
            self.child.stdin.write("release\n")
            self.child.stdin.flush()
            assert self.child.stdout.readline().strip() == "released"
            self.child_holds = False
        if self.connection is not None:
            self.connection.execute("ROLLBACK")
            self.connection.close()
            self.connection = None

    def close(self) -> None:
        self.release()
        self.child.stdin.write("quit\n")
        self.child.stdin.flush()
        self.child.wait(30)


@pytest.fixture(scope="module")
def readers():
    readers = Readers()
    yield readers
    readers.close()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("forget-property")


def _payload(kind: str, named: bool, marker: str, i: int) -> dict:
    at = T0 + i * 600
    hints = [{"mention_text": marker.capitalize(), "entity_type": "person"}] if named else []
    if kind == "sensor":
        return {"source_type": "browser", "source_item_id": f"item-{i}", "occurred_at": at,
                "activity": {"source_code": "browser", "action_code": "visit_page"},
                "provenance": {"url": f"https://{marker}.example/page", "title": f"Reading about {marker}"},
                "entities": hints}
    turn = {"role": kind, "text": f"Today I talked with {marker.capitalize()} about the {marker} plan."}
    if kind == "user":
        turn["provenance"] = "human_input"
    return {"source_type": "chat", "session_id": f"s{i // 4}", "source_item_id": f"item-{i}", "occurred_at": at,
            "chat": turn, "entities": hints}


@settings(max_examples=int(os.environ.get("MAGI_FORGET_EXAMPLES", "25")))
@given(words=markers, before=st.lists(_op, min_size=3, max_size=14), after=st.lists(_op, max_size=5),
       doomed=st.lists(st.booleans(), min_size=12, max_size=12), by_entity=st.booleans())
def test_after_the_scrub_no_file_holds_a_forgotten_marker(readers, root, words, before, after, doomed, by_entity):
    count("forget scrub")
    memory = Memory.open(Path(tempfile.mkdtemp(dir=root)), embedder="hashing")
    events: list[tuple[int, str, bool]] = []           # (index, marker, named as entity)
    try:
        def run(ops):
            for op, arg in ops:
                if op == "ingest" and len(events) < len(words):
                    i = len(events)
                    kind, named = arg
                    memory.ingest(_payload(kind, named, words[i], i))
                    events.append((i, words[i], named))
                elif op == "pending":
                    memory.process_pending()
                elif op == "run_due":
                    memory.run_due(now=T0 + (len(events) + 12) * 600)
                elif op == "backup":
                    memory.backup_now()
                elif op == "hold":
                    readers.hold(arg, memory.path)
                elif op == "release":
                    readers.release()

        run(before)
        gone = [(i, word, named) for i, word, named in events if doomed[i]]
        event(f"forgets {'none' if not gone else 'some'}; reader {'holds' if readers.holding else 'none'}")
        event(f"backups {len(memory.backups())}")
        for i, word, named in gone:
            if by_entity and named:
                receipt = memory.forget(entity=word.capitalize())
            else:
                receipt = memory.forget(source_item_ids=[f"item-{i}"])
            assert receipt["scrub"] == ("pending" if readers.holding else "done") or not readers.holding
        run(after)                                      # more work, maybe a reader, before the scrub finishes
        readers.release()
        for _ in range(3):
            if not memory.resume_forget()["pending"]:
                break
        assert all(r["scrub"] == "done" for r in memory.forget_receipts(limit=100))
        forgotten = {word for _, word, _ in gone}
        kept = {word for _, word, _ in events} - forgotten
        assert files_holding(memory.path.parent, forgotten) == {}
        conn = memory.db.reader()
        for word in kept:
            # (its neighbours' index rows may hold it too: a turn is indexed with its context)
            assert match_count(conn, "fact_events_fts", word) >= 1, word
            pack = memory.query(f"what about {word}?", mode="episode_recall", now=T0 + 30 * 600)
            assert any(word in f.text for f in pack.findings), word
        assert integrity_ok(memory)
    finally:
        readers.release()
        memory.close()
