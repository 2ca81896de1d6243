"""Current facts first (issue 17, item 4): the newest statement of an attribute leads, older ones are history.

A question about a single-valued attribute (where the user lives, works, studies; their
relationship status) that does not ask about the past ("used to", "before", 以前) wants the
value that holds as of ``now``. L2 knows which statement that is: the projection evolved the
older edge into history when the newer one came (architecture §6). The L1 findings, though, are
ranked by their words, and "I work at Acme" shares "work" with "where do I work?" while
"I got a new job at Stripe" shares nothing. So, after ranking:

- an L1 finding whose event supports only rows of the asked attribute that were no longer
  current as of ``now`` is labelled ``status = "history"`` and goes after the rest;
- when that happened, the current L2 finding of the attribute leads the pack (in fact modes
  the derived facts otherwise follow the L1 findings);
- an L1 finding whose event supports a current row is labelled ``status = "current"``.

A user-denied row is neither: it is wrong, not history, and labels nothing.
"""

from __future__ import annotations

import re

from ..l2 import predicates as P
from ..store import assertions, graph
from ..store.connection import Connection
from .pack import Finding
from .structured import Grounding

HISTORY_HINT = ("Findings marked 'history' state an older value of what is asked (replaced by a newer statement "
                "as of the question's time): answer with the 'current' one and mention the older only as history.")


# A question in the past or perfect tense ("did I live…", "where have I worked?", "was I…", 以前, …过) asks
# for history too: what held then answers it.
_PAST_TENSE = re.compile(r"\b(?:did|was|were|had|used\s+to|ever|been)\b|\b(?:have|has)\s+\w+\s+\w+(?:ed|en|t)\b"
                         r"|以前|之前|曾经|过去|当初|原来|\w过[吗？?]?$", re.IGNORECASE)


def asks_present(question: str, grounding: dict, window_named: bool) -> bool:
    """Does a fact question ask what holds now ("where do I work?")? Then a fact that was replaced or ended is
    history and does not answer it. Not when it asks the past (tense, "before", a time window)."""
    return bool(grounding.get("predicates")) and not grounding.get("history", False) and not window_named \
        and not _PAST_TENSE.search(question)


def single_valued(plan: Grounding) -> list[str]:
    """The asked predicates that hold one value at a time (LIVES_IN, WORKS_AT, …)."""
    return sorted(p for p in plan.predicates if (spec := P.spec(p)) is not None and spec.single_valued)


def label_currency(conn: Connection, findings: list[Finding], plan: Grounding, now: float) -> dict[str, str]:
    """event id -> "current" | "history" for the L1 findings that support rows of the asked attributes."""
    predicates = single_valued(plan)
    events = [f.event_id for f in findings if f.layer == "L1"]
    if not predicates or not events or not plan.subject_ids:
        return {}
    rows = graph.edge_currency_by_event(conn, events, plan.subject_ids, predicates, now)
    return {event_id: "current" if current else "history" for event_id, current in rows}


def newest_first(conn: Connection, findings: list[Finding], plan: Grounding, now: float,
                 trace: dict | None = None) -> list[Finding]:
    """The findings with older statements of the asked attribute labelled history and moved last."""
    if plan.history or plan.past:
        return findings                       # "where did I live before?" asks for the history
    labels = label_currency(conn, findings, plan, now)
    if not labels:
        return findings
    for finding in findings:
        if finding.layer == "L1" and finding.event_id in labels:
            finding.status = labels[finding.event_id]
    older = [f for f in findings if f.layer == "L1" and f.status == "history"]
    if trace is not None:
        trace["current_facts"] = {"history": len(older), "current": sum(v == "current" for v in labels.values())}
    if not older:
        return findings
    asked = set(single_valued(plan))
    lead = [f for f in findings if f.layer == "L2" and f.status == "current" and _predicate_of(conn, f) in asked]
    rest = [f for f in findings if f not in lead and f.status != "history"]
    return lead + rest + [f for f in findings if f.status == "history"]


_TRAIT_PREDICATE = {p.trait: p.name for p in P.CORE.values() if p.trait}


def _predicate_of(conn: Connection, finding: Finding) -> str | None:
    """The predicate an L2 edge or assertion finding states (an assertion's trait names its predicate)."""
    kind, _, key = finding.event_id.partition(":")
    if kind == "edge":
        return graph.edge_predicate(conn, key)
    if kind == "assertion" and key.isdigit():
        trait = assertions.assertion_trait(conn, int(key))
        return _TRAIT_PREDICATE.get(trait) if trait is not None else None
    return None
