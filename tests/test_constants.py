"""Constants the design fixes live once (issue 18, item 5), and the prose that quotes them says what the code
does: each quote below is built from the constant, so changing a number without its documents fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from magi_desktop.core import l0
from magi_desktop.core.l2.constants import LIVE, SELF_KEY
from magi_desktop.core.l3 import insights
from magi_desktop.core.l4 import skills
from magi_desktop.core.l4.constants import (
    DISTILL_AFTER,
    FAILURES_TO_OPEN,
    OPEN_SECONDS,
    SUCCESSES_TO_CLOSE,
    TRACES_KEPT,
)
from magi_desktop.core.llm.openai import BREAKER_AFTER, BREAKER_COOLDOWN, BREAKER_MAX_COOLDOWN
from magi_desktop.core.session_constants import SESSION_IDLE_SECONDS

ROOT = Path(__file__).resolve().parent.parent
IDLE_MINUTES = f"{SESSION_IDLE_SECONDS // 60:.0f}"
OPEN = f"{OPEN_SECONDS:.0f}"
FAIL, CLOSE = FAILURES_TO_OPEN, SUCCESSES_TO_CLOSE

QUOTES = {
    "docs/architecture.md": [
        f"after {IDLE_MINUTES} idle minutes",
        f"the last {TRACES_KEPT} traces",
        f"{FAIL} failures in a row open it",
        f"{OPEN} s later half-open, {CLOSE} successes close it",
        f"runs when {DISTILL_AFTER} new traces accumulated",
        f"went quiet for {IDLE_MINUTES} minutes",
        f"a provider breaker after {BREAKER_AFTER} failed requests, {BREAKER_COOLDOWN:.0f} s doubling to "
        f"{BREAKER_MAX_COOLDOWN // 60:.0f} min",
    ],
    "README.md": [
        f"keeps the last {TRACES_KEPT} traces and drives a circuit breaker ({FAIL} failures in a row open it, "
        f"{OPEN} s later it half-opens, {CLOSE} successes close it",
        f"after {DISTILL_AFTER} new traces",
        f"go quiet for {IDLE_MINUTES} minutes",
        f"idle sessions end after {IDLE_MINUTES} min",
        f"went quiet ({IDLE_MINUTES} min)",
        f"only those the memory received in the last {IDLE_MINUTES} minutes",
        f"after {FAIL} failures in a row the breaker opens and the {FAIL + 1}th call is not made",
        f"after {BREAKER_AFTER} failed requests the provider pauses its calls, {BREAKER_COOLDOWN:.0f} s doubling up "
        f"to {BREAKER_MAX_COOLDOWN // 60:.0f} min",
    ],
    "magi_desktop/agents/mcp_server.py": [
        f"after {FAIL} failures in a row the breaker opens",
        f"it half-opens after {OPEN} s; {CLOSE} successes close it",
        f"until idle {IDLE_MINUTES} minutes",
    ],
    "magi_desktop/core/l4/skills.py": [
        f"closed ──{FAIL} failures in a row──▶ open ──{OPEN} s──▶ half_open ──{CLOSE} successes──▶ closed",
        f"reaches its threshold ({DISTILL_AFTER},",
    ],
    "magi_desktop/core/memory.py": [
        f"({FAIL} failures in a row; it half-opens after {OPEN} s and closes after {CLOSE} successes)",
    ],
    "magi_desktop/core/services/fact_book.py": [f"idle {IDLE_MINUTES} minutes"],
}


def _prose(relative: str) -> str:
    return " ".join((ROOT / relative).read_text(encoding="utf-8").split())


@pytest.mark.parametrize("relative", sorted(QUOTES))
def test_prose_quotes_the_constants_values(relative):
    prose = _prose(relative)
    missing = [quote for quote in QUOTES[relative] if quote not in prose]
    assert not missing, f"{relative} no longer says (or the constant changed): {missing}"


def test_the_shared_constants_are_the_ones_their_users_read():
    assert l0.IDLE_SECONDS == insights.SESSION_END_SECONDS == SESSION_IDLE_SECONDS == 1800
    assert (skills.FAILURES_TO_OPEN, skills.OPEN_SECONDS, skills.SUCCESSES_TO_CLOSE) == (3, 600.0, 2)
    assert SELF_KEY == "@user" and LIVE == ("tentative", "corroborated", "stable")


L4_NUMBERS = ("FAILURES_TO_OPEN", "OPEN_SECONDS", "SUCCESSES_TO_CLOSE", "TRACES_KEPT", "DISTILL_AFTER")
SHARED = {"SELF_KEY": "magi_desktop/core/l2/constants.py", "LIVE": "magi_desktop/core/l2/constants.py",
          "SESSION_IDLE_SECONDS": "magi_desktop/core/session_constants.py",
          **{name: "magi_desktop/core/l4/constants.py" for name in L4_NUMBERS}}


def test_each_shared_constant_is_assigned_in_its_constants_module_only():
    """A module may import (and alias) them; none assigns its own value again."""
    assigned: dict[str, list[str]] = {}
    for path in sorted((ROOT / "magi_desktop").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Name) and target.id in SHARED and not isinstance(node.value, ast.Name):
                    assigned.setdefault(target.id, []).append(str(path.relative_to(ROOT)))
    assert assigned == {name: [home] for name, home in SHARED.items()}


def test_the_literal_values_appear_nowhere_else_as_constants():
    """The duplicates the issue named: no other module spells the user's key or the live statuses again."""
    spelled = []
    for path in sorted((ROOT / "magi_desktop").rglob("*.py")):
        if path.name == "constants.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value == SELF_KEY:
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) for e in node.elts) and tuple(
                    e.value for e in node.elts) == LIVE:
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert spelled == []
