"""Questions with nothing to search for but a time (architecture §16): list what happened, don't search.

"What did I do today?", "what happened recently?", "上周", "我今天做了什么" name only a window: no word
of theirs is in the events, so the search paths find nothing (or noise). They are answered by listing the
window — the L3 summaries of it where they exist, then its events grouped by source, the most telling
source first (the user's own words, then the calendar, Git, the terminal … and the many page visits last),
every source present getting a share of the slots so 300 visits cannot crowd out two commits.

"What did you recommend last time?" is the same kind of question about the conversation: it names no
topic, only the assistant's speech, so the assistant's latest turns are listed (suggestions first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..store import activity_blocks, l1
from ..store.connection import Connection
from .pack import FINDING_TEXT_CHARS, Finding, Layer
from .paths import QueryContext
from .sufficiency import source_kind
from .summaries import L3Recall
from .temporal import TemporalIntent, Window
from .terms import stem

RECENT_DAYS = 3              # "recently" / "lately" with no calendar window: the last 3 days (issue 17, item 7)
L3_SHARE = 2                 # summaries of the window that lead the listing, at most
ASSISTANT_TURNS = 5          # "what did you say last time": the latest assistant turns listed
# A source's events in the window are counted up to this many (the hint says "more than"): a count reads every
# entry of the window, a month of a heavy user's 80k events ~50 ms, and the listing shows a share of ten at most.
COUNT_CAP = 1_000
# The order sources are listed in: what the user said, what they scheduled, made and ran, then what they
# only looked at. Sources not named here come after the named ones, the browser always last.
SOURCE_ORDER = ("chat", "calendar", "git", "terminal", "music", "app_usage")
LAST_SOURCES = ("browser",)

# Words that ask about activity in general, not about any one thing ("what did I *do*", "发生了什么").
_ACTIVITY_WORDS = frozenset(stem(w) for w in """
do did done doing happen happened happening work worked working busy up spend spent activity activities
new going on anything everything stuff things thing events event 做 干 干嘛 忙 发生 事 事情 啥 都
""".split())
# Words that ask what the assistant said, not about what.
_SPEECH_WORDS = frozenset(stem(w) for w in """
recommend recommended recommendation recommendations suggest suggested suggestion suggestions say said tell
told mention mentioned advise advised advice propose proposed answer answered reply replied write wrote
time last previous previously earlier before 推荐 建议 说 讲 提到 回答 告诉 上次 之前
""".split())
_ADDRESSED = re.compile(r"\byou\b|你|您", re.IGNORECASE)
_ADVICE_VERBS = re.compile(r"recommend|suggest|advi[cs]e|propos|推荐|建议", re.IGNORECASE)
_ADVICE_WORDS = re.compile(
    r"\b(?:recommend|suggest|try|should|could|consider|advise|i'?d go with)\w*|推荐|建议|试试|可以", re.IGNORECASE)


@dataclass
class Listing:
    """A listing's findings and what it left out, for the pack's hint and trace."""
    label: str
    findings: list[Finding]
    counts: dict[str, int] = field(default_factory=dict)     # events in the window per source, up to COUNT_CAP + 1
    kind: str = "window"                                     # "window" | "assistant"

    def to_trace(self) -> dict:
        return {"kind": self.kind, "label": self.label, "counts": self.counts, "counted_up_to": COUNT_CAP + 1,
                "listed": len(self.findings)}

    def hint(self) -> str:
        if self.kind == "assistant":
            return ("The question names no topic: these are the assistant's latest turns, newest first — what the "
                    "assistant said, not a fact about the user.")
        counts = ", ".join(f"{source} {n:,}" if n <= COUNT_CAP else f"{source} more than {COUNT_CAP:,}"
                           for source, n in self.counts.items())
        return (f"The question names only a time: the findings list what was recorded in '{self.label}', grouped by "
                f"source, most telling first ({counts} event(s) in the window; a share of each is shown).")


def window_only(terms: list[str], temporal: TemporalIntent) -> bool:
    """Does the question name a time and nothing else to look for?"""
    if temporal.anchor is not None or (temporal.window is None and not temporal.recent):
        return False
    return all(stem(t) in _ACTIVITY_WORDS for t in terms)


def assistant_only(text: str, terms: list[str], mode: str) -> bool:
    """"What did you recommend last time?": a question about the assistant's words that names no topic."""
    return mode == "episode_recall" and bool(_ADDRESSED.search(text)) and all(stem(t) in _SPEECH_WORDS for t in terms)


def listing_window(temporal: TemporalIntent, now: float) -> Window:
    if temporal.window is not None:
        return temporal.window
    return Window(now - RECENT_DAYS * 86400.0, now + 1.0, f"the last {RECENT_DAYS} days")


class WindowListing:
    def __init__(self, conn: Connection):
        self.conn = conn

    def window(self, ctx: QueryContext, temporal: TemporalIntent, limit: int) -> Listing:
        window = listing_window(temporal, ctx.now)
        # Visible: recorded by now. A window still to come ("tomorrow") lists its plans; any other lists what
        # happened, not a plan for later today.
        ahead = getattr(window, "ahead", False)
        # An activity block is listed in place of the visits it counts (core/aggregation).
        where = activity_blocks.unfolded(l1.window_filter(ctx.scopes, window.start, window.end, ctx.now, ahead),
                                         ctx.now)
        counts = l1.events_per_source(self.conn, where, cap=COUNT_CAP)
        if not counts:
            return Listing(window.label, [], {})
        sources = sorted(counts, key=_source_rank)
        shares = _shares([counts[s] for s in sources], limit)
        findings = self._summaries(ctx, window, limit)
        for source, share in zip(sources, shares, strict=True):
            if share:
                rows = l1.listed_events_of_source(self.conn, where, source, ahead, share)
                findings.extend(_finding(row, "window") for row in sorted(rows, key=lambda r: r[1]))
        for rank, finding in enumerate(findings):
            finding.score = round(1.0 - rank / (2 * max(len(findings), 1)), 4)
        return Listing(window.label, findings, {s: counts[s] for s in sources})

    def assistant(self, ctx: QueryContext, text: str, temporal: TemporalIntent) -> Listing:
        window = temporal.window
        rows = l1.assistant_turns(self.conn, ctx.now, (window.start, window.end) if window is not None else None,
                                  ASSISTANT_TURNS * 4)
        if _ADVICE_VERBS.search(text):   # "what did you recommend": the turns that suggest something first
            rows.sort(key=lambda r: not _ADVICE_WORDS.search(r[2]))
        findings = [_finding(row, "assistant_turns") for row in rows[:ASSISTANT_TURNS]]
        for rank, finding in enumerate(findings):
            finding.score = round(1.0 - rank / (2 * ASSISTANT_TURNS), 4)
        return Listing(window.label if window else "the conversation", findings, kind="assistant")

    def _summaries(self, ctx: QueryContext, window: Window, limit: int) -> list[Finding]:
        """The window's temporal summaries (found by how well their span fits it), each answering for it."""
        found = L3Recall(self.conn).findings(ctx, TemporalIntent(window=window), "activity_summary",
                                             limit=min(L3_SHARE, limit), summary_type="temporal")
        for finding in found:
            finding.answers = True
        return found



def _source_rank(source: str) -> tuple[int, str]:
    if source in SOURCE_ORDER:
        return SOURCE_ORDER.index(source), source
    if source_kind(source) in LAST_SOURCES:
        return len(SOURCE_ORDER) + 1 + LAST_SOURCES.index(source_kind(source)), source
    return len(SOURCE_ORDER), source


def _shares(sizes: list[int], limit: int) -> list[int]:
    """Slots per source, round-robin in source order: each present source gets one before any gets two."""
    shares = [0] * len(sizes)
    while sum(shares) < limit and any(share < size for share, size in zip(shares, sizes, strict=True)):
        for i, size in enumerate(sizes):
            if shares[i] < size and sum(shares) < limit:
                shares[i] += 1
    return shares


def _finding(row, path: str) -> Finding:
    event_id, at, content, source, item, session, author, evidence, speaker = row
    text = content if len(content) <= FINDING_TEXT_CHARS else content[: FINDING_TEXT_CHARS - 1] + "…"
    return Finding(layer=Layer.L1, text=text, occurred_at=at, source=source, source_item_id=item, session_id=session,
                   author=author, evidence_class=evidence, score=1.0, event_id=event_id, speaker=speaker,
                   supporting_event_ids=[event_id], supporting_source_item_ids=[item] if item else [], paths=[path],
                   answers=True)
