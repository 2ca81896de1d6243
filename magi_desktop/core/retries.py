"""A client's retry of a chat message, told apart from the user saying something again.

An agent that lost the answer to a call that stored a message calls again. With its own id for the
message (``source_item_id``) the dedupe key finds the first copy — provided the id names that same
message: an id that another session's message, or another text, already has is refused rather than
taken as a retry (that text would be lost). Without an id, the same message (role, provenance, tool,
speaker and stored text) as the last one of its session, with nothing between and soon after, is the
retry. Both are decided inside the write transaction, so two retries racing for the lock store once.
"""

from __future__ import annotations

import json

from .contracts import IngestResult, MemoryEvent, PayloadError
from .speakers import said_speaker
from .store.connection import Connection
from .store.l1 import last_chat_message, message_with_item_id

_SAID = ("role", "provenance", "tool_name")


def repeated(conn: Connection, event: MemoryEvent, within: float) -> IngestResult | None:
    """Inside the write transaction: the stored message ``event`` repeats, or None (store it). Raises
    :class:`PayloadError` when ``event``'s item id is another message's."""
    if event.event_type != "CHAT_MESSAGE" or event.session_id is None:
        return None
    if event.source_item_id is not None:
        other = message_with_item_id(conn, event.source, event.source_item_id)
        if other is not None and (other[0] != event.session_id or other[1] != event.content):
            raise PayloadError("source_item_id", f"{event.source_item_id!r} is already the id of another message "
                                                 "(another session, or other words): give each message its own id")
        return None                     # new, or the same message: the dedupe key does the rest
    row = last_chat_message(conn, event.session_id)
    if row is None or not 0 <= event.timestamp - row[1] <= within or row[2] != event.content:
        return None
    timeline = json.loads(row[3]).get("timeline", {})
    said = event.metadata["timeline"]
    if any(timeline.get(key) != said.get(key) for key in _SAID) or said_speaker(timeline) != said_speaker(said):
        return None   # the speaker as sent: one read from a "Name:" prefix was not
    return IngestResult(event_id=row[0], duplicate=True, target=row[4], evidence_class=row[5])
