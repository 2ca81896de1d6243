"""The numbers of procedural experience (architecture §8), in one place: each with why.

``l4/skills.py`` runs the circuit breaker and keeps the traces with them; the prose that quotes them (the
architecture's §8, the README, the ``log_tool_run`` MCP tool's description, ``Memory.tool_decision``) is
checked against them by ``tests/test_constants.py``.
"""

from __future__ import annotations

from typing import Final

#: Failures in a row that open a tool's breaker: one failure is noise, three in a row a broken tool (§8).
FAILURES_TO_OPEN: Final = 3
#: Seconds an open breaker refuses calls before it lets one through (half-open): long enough for a
#: rate limit or an outage to pass, short enough to retry within a session (§8).
OPEN_SECONDS: Final = 600.0
#: Successes in a row a half-open breaker needs to close again (one could be luck) (§8).
SUCCESSES_TO_CLOSE: Final = 2
#: Traces kept per (tool, category) in ``l4_execution_traces``: what distillation samples from (§8).
TRACES_KEPT: Final = 50
#: New traces that make a skill due for distillation, at first (the threshold rises with the runs) (§8).
DISTILL_AFTER: Final = 5
