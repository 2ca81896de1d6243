"""The shapes of what the MCP tools take and answer, published as each tool's ``inputSchema`` and
``outputSchema``: the SDK validates every answer's ``structuredContent`` against its shape, so a tool
cannot drift from what a client was told (a refusal — ``isError`` — has the :class:`Refusal` shape instead).

Times in answers are local ISO-8601 with the UTC offset (what "yesterday" is measured against); keys with
nothing to say are left out rather than sent as null.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from typing_extensions import NotRequired, TypedDict  # pydantic needs these on Python < 3.12

from ..core.contracts import CHAT_PROVENANCES
from ..core.remember import CATEGORIES
from ..core.retrieval.modes import MODES

QueryMode = Literal[MODES]                       # type: ignore[valid-type]
Provenance = Literal[CHAT_PROVENANCES]           # type: ignore[valid-type]
Category = Literal[CATEGORIES]                   # type: ignore[valid-type]
Layer = Literal["L1", "L2", "L3", "facts"]
BeliefState = Literal["current", "history", "denied", "all"]
BeliefCategory = Literal["assertions", "relationships", "facts"]
ReviewAction = Literal["confirm", "correct", "deny"]


class TurnMessage(TypedDict):
    """One message of the current turn, as the client saw it."""

    id: str                     # the event id log_turn returned, or the client's own message id
    role: Literal["user", "assistant", "tool"]
    text: str
    provenance: NotRequired[Provenance]


class Refusal(TypedDict):
    """A refused call's ``structuredContent`` (with ``isError``): ``error`` is a code to act on, ``message``
    says what to send instead, ``field`` names the argument at fault when one is."""

    error: str
    message: str
    field: NotRequired[str]


# ---------------------------------------------------------------- memory_query


class FindingOut(TypedDict):
    n: int                                  # its number in the answer's text: [n]
    id: str                                 # an event id (L1) or the derived row's id
    layer: str                              # L0 … L4, or "fact"
    author: NotRequired[str]                # user, assistant, a speaker's name, a source
    source: NotRequired[str]
    evidence_class: NotRequired[str]
    text: str
    at: NotRequired[str]
    session_id: NotRequired[str]
    source_item_id: NotRequired[str]
    status: NotRequired[str]
    indirect: NotRequired[bool]
    answers: NotRequired[bool]              # False: related, but does not answer the question
    supporting: NotRequired[list[str]]      # a derived finding's evidence (ids)


class QueryOut(TypedDict):
    status: str
    query_mode: str
    insufficient_evidence: bool
    findings: list[FindingOut]
    hints: list[str]


# ---------------------------------------------------------------- writing tools


class LogTurnOut(TypedDict):
    event_id: str
    duplicate: bool                         # True: a retry, stored once
    evidence_class: str
    current_turn_messages: int


class ToolRunOut(TypedDict):
    event_id: str | None
    duplicate: bool
    breaker: dict[str, Any]                 # state, allowed, reason, … (the L4 decision)


class RememberOut(TypedDict):
    fact_id: int
    evidence_type: str | None
    source_message_id: str | None
    replaces: int | None


class WorkingOut(TypedDict):
    session_id: str
    working_memory: dict[str, Any] | None


# ---------------------------------------------------------------- reading the memory


class EventOut(TypedDict):
    id: str
    at: str
    source: str
    text: str
    author: NotRequired[str]
    evidence_class: NotRequired[str]
    source_item_id: NotRequired[str]
    session_id: NotRequired[str]
    cold: NotRequired[bool]                 # old and summarised: searched only when a question reaches back


class FactOut(TypedDict):
    fact_id: int
    content: str
    category: str
    scope: str                              # user | project
    evidence_type: str                      # stated: the user said it (quote and message below)
    status: str                             # active | superseded | merged | deleted …
    created_at: str
    quote: NotRequired[str]
    project: NotRequired[str]
    source_message_id: NotRequired[str]
    superseded_by: NotRequired[int]


class SummaryOut(TypedDict):
    summary_id: int
    title: str
    kind: str                               # hour | day | week | month, a theme, an insight
    start: str
    end: str
    event_count: int
    text: str


class BeliefOut(TypedDict):
    key: str                                # what review() takes
    category: str
    subject: str
    relation: str
    value: str
    status: str
    state: str                              # current | history | denied
    confidence: float
    observations: int                       # how many times the evidence said it
    sources: list[str]
    first_observed: str
    last_observed: str
    confirmed: NotRequired[str]             # when the user confirmed it


class ListOut(TypedDict):
    """One page of a layer: only the list of that layer is present."""

    layer: str
    events: NotRequired[list[EventOut]]
    facts: NotRequired[list[FactOut]]
    summaries: NotRequired[list[SummaryOut]]
    beliefs: NotRequired[list[BeliefOut]]
    next_cursor: str | None                 # pass it as cursor for the next page; null on the last


class RecentOut(TypedDict):
    start: str
    end: str
    per_source: dict[str, int]              # a source with more than 1,000 says 1001
    events: list[EventOut]
    next_cursor: str | None                 # for list_memories(layer="L1", end=…, cursor=…)


class BeliefsOut(TypedDict):
    beliefs: list[BeliefOut]
    next_cursor: str | None


class GetFactOut(TypedDict):
    fact: FactOut | None


class SnapshotOut(TypedDict):
    as_of: str
    states: dict[str, Any]
    traits: dict[str, Any]
    relations: list[dict[str, Any]]
    facts: list[dict[str, Any]]


# ---------------------------------------------------------------- destructive and reviewing tools


class ForgetPreview(TypedDict):
    events: int
    by_source: dict[str, int]
    newest: list[EventOut]                  # the newest few of them
    traces: int                             # tool runs recorded by the agent runtime
    entities: list[str]                     # forgotten by name, with their edges and assertions
    facts: list[int]                        # saved facts that cite one of the events: they go too


class ForgetOut(TypedDict):
    dry_run: bool                           # True: nothing was removed; `would_forget` says what would go
    would_forget: ForgetPreview
    confirmed_by: NotRequired[Literal["quote", "elicitation"]]
    receipt: NotRequired[dict[str, Any]]    # the real run's receipt: what each table lost, the scrub state


class DeleteFactOut(TypedDict):
    dry_run: bool
    fact: FactOut
    confirmed_by: NotRequired[Literal["quote", "elicitation"]]
    deleted: NotRequired[bool]


class ReviewOut(TypedDict):
    dry_run: bool
    action: str
    belief: BeliefOut                       # before the review
    value: NotRequired[str]                 # a correction's new value
    confirmed_by: NotRequired[Literal["quote", "elicitation"]]
    review_id: NotRequired[int]             # the review, as the viewer's Undo knows it
    after: NotRequired[BeliefOut | None]


# ---------------------------------------------------------------- arguments, with what a client shows of them

When = Annotated[float | str | None, Field(
    description="A moment: ISO-8601 with its UTC offset (2026-11-30T12:00:00+08:00) or UNIX seconds")]
SessionId = Annotated[str, Field(description="The conversation: the session id you log its messages under")]
OptionalSession = Annotated[str | None, Field(
    description="The conversation: the session id you log its messages under")]
Quote = Annotated[str | None, Field(
    description="The user's exact words from the current turn of session_id asking for this (their own "
                "message, logged with log_turn)")]
Confirm = Annotated[bool, Field(description="false (default): a dry run that changes nothing; true: do it, with "
                                            "the user's consent (quote, or the client asks them)")]
Cursor = Annotated[str | None, Field(description="The next_cursor of the previous page")]
FactId = Annotated[int, Field(description="A saved fact's id (fact_id)", ge=1)]


QueryLimit = Annotated[int, Field(description="Findings at most (1-50, default 10)", ge=1, le=50)]
PageLimit = Annotated[int, Field(description="Items per page at most (1-100, default 20)", ge=1, le=100)]
