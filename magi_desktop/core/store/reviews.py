"""The user's word on a belief (``core/l2/review.py``): the reviews (``user_reviews``, each with what the rows
were before, so it can be undone), the denials that keep a deleted belief from coming back
(``user_denials``), and the row updates each review makes on ``tom_trait_assertions`` and ``kg_edges``."""

from __future__ import annotations

from .connection import Connection


def reviews_of(conn: Connection, kind: str, row_key: str) -> list[tuple[int, str, str, float, float | None]]:
    """(review_id, action, detail_json, created_at, undone_at) of one belief's reviews, in order."""
    return conn.execute("SELECT review_id, action, detail_json, created_at, undone_at FROM user_reviews "
                        "WHERE kind = ? AND row_key = ? ORDER BY review_id", (kind, row_key)).fetchall()
