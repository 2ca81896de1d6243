"""The user's reviews (``user_reviews``): confirm, delete, correct, merge. What a review does to L2 is
``core/l2/review.py``'s."""

from __future__ import annotations

from .connection import Connection

# --------------------------------------------------------------------- the viewer's list (services/review)

def latest_review_ids(conn: Connection, limit: int) -> list[int]:
    """Ids of the latest reviews, newest first."""
    return [r[0] for r in conn.execute("SELECT review_id FROM user_reviews ORDER BY review_id DESC LIMIT ?",
                                       (limit,))]
