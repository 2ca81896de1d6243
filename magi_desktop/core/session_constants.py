"""When a conversation has ended without saying so (architecture §2, §7, §9), in one place.

L0 drops a session's working memory after it (``l0.py``), fact extraction takes the conversation up
(``extraction/pipeline.py``), and L3 reflects on it as a finished task (``l3/insights.py``): one number, so
the three agree on which conversations are over.
"""

from __future__ import annotations

from typing import Final

#: Seconds without a new turn after which a session counts as ended: longer than a pause to read or think,
#: shorter than a break between two tasks (§2: L0 "after 30 idle minutes"; §9: "went quiet for 30 minutes").
SESSION_IDLE_SECONDS: Final = 30 * 60

#: Live sessions a process keeps state for (L0's workbenches), the least
#: recently used dropped first: far more than one person runs at once, small enough to stay a few MB.
SESSIONS_KEPT: Final = 256
