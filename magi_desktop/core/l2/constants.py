"""Constants L2 and its readers share (architecture §6), in one place: each with why and where from.

The graph (``l2/graph.py``), maintenance, reviews, snapshots, the beliefs view, the agents' snapshot and
structured retrieval all read them; a copy elsewhere would drift.
"""

from __future__ import annotations

from typing import Final

#: The user's own entity's name key: what "I" and "my" resolve to, the subject of self-reports (§4, §6).
SELF_KEY: Final = "@user"
SELF_NAME: Final = "the user"     # the name the user's own entity has until they give it theirs

#: The statuses of an edge or assertion that still holds; retired ones (overwritten, expired, superseded,
#: user_denied) are history (§6: "status tentative → corroborated → stable; retired as …"). A tuple, so
#: it reads as an SQL list in ``status IN {LIVE}``.
LIVE: Final = ("tentative", "corroborated", "stable")
