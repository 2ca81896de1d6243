"""Speakers from the "Name: text" convention (issue 17, item 6).

Clients often send a transcript turn as "Caroline: I went to the support group" without the optional
``chat.speaker`` field. The rule, in two steps:

1. *Shape* (:func:`prefixed_name`, pure): the turn starts with 1–3 capitalised words (letters, ``'``, ``-``,
   each word starting with a capital and not all capitals: "TODO", "FYI" are labels) or with 2–4 CJK
   characters, then ":" or "：", then text. Labels are refused (:data:`LABELS`: "Note", "Error", "Warning",
   "Q", "A", "Step 1", "Re", role words like "User" / "Assistant", 注意, 问题 …); so are digits ("Step 1",
   "10:30"), URLs ("https://…": lower case) and a name without text after it. A candidate is kept in the
   event's metadata (``$.timeline.speaker_candidate``) and means nothing yet.
2. *Recurrence* (:func:`settle`, inside the write transaction): a candidate is accepted as a speaker when the
   same name leads another chat turn of the memory — a stored one (a candidate, or a speaker given in
   ``chat.speaker`` or accepted before) or another of the same batch. The first turn of a name waits as a
   candidate and is settled by the second. An accepted name is written where the speaker field is read:
   ``$.timeline.speaker`` with ``speaker_source: "name_prefix"``, and the event is linked to the person.
   While a turn waits as a candidate, L2 files nothing it says in the first person under anyone ("Dad: I got
   laid off" is not the user's job ending); once settled, the turn is projected again under its speaker.

It never changes the event's role, author, content, provenance or evidence class, nor what the event says
was *sent* (:func:`said_speaker`: export, import and retries see no speaker field that was not sent).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from .store import entities as stored_entities
from .store import speakers as stored_speakers
from .store.json_text import compact_json

if TYPE_CHECKING:   # the store imports ingest, which imports this module
    from .contracts import MemoryEvent
    from .store.connection import Connection

NAME_PREFIX = "name_prefix"

_LATIN_WORD = r"[A-Z][A-Za-z'’\-]*"
_PREFIX = re.compile(
    rf"^\s*(?P<name>{_LATIN_WORD}(?: {_LATIN_WORD}){{0,2}}|[\u3400-\u9fff]{{2,4}})\s*[:：]\s*(?P<rest>\S)")

# Words that lead a line as labels, not as names (case-insensitive; the whole candidate or its first word).
LABELS = frozenset("""
a q answer question note notes nb ps error errors warning warnings info information debug todo fixme hint hints tip
tips summary conclusion title subject date time location place price total result results output input example
examples source sources step steps part chapter section option options update edit re fwd fw cc bcc from to
important reminder remember caution attention status reason reasons problem solution fix done task tasks goal
goals plan agenda action actions item items topic re: user assistant system human ai bot tool me you we they
transcript context prompt reply response message comment comments feedback disclaimer warning: pros cons
usage command code file path link url email phone address name names here there then now today yesterday
tomorrow morning evening night day week month year monday tuesday wednesday thursday friday saturday sunday
update: news breaking spoiler
""".split())
CJK_LABELS = frozenset("""
注意 备注 问题 答案 回答 错误 警告 提示 总结 结论 步骤 时间 地点 用户 助手 系统 标题 主题 日期 原因 结果 输出 输入 例如
比如 说明 更新 提醒 重要 任务 目标 计划 链接 地址 电话 邮箱 名字 今天 昨天 明天
""".split())


def prefixed_name(text: str) -> str | None:
    """The speaker candidate a turn starts with ("Caroline: …" → "Caroline"), or None (see the module rule)."""
    match = _PREFIX.match(text or "")
    if match is None:
        return None
    name = match.group("name")
    if name[0] >= "\u3400":
        return None if name in CJK_LABELS else name
    words = name.split()
    if any(len(w) > 1 and w.isupper() for w in words) or len(words[0]) < 2:
        return None            # "TODO", "FYI", "Q", "A"
    if name.casefold() in LABELS or words[0].casefold() in LABELS:
        return None
    return name


def said_speaker(timeline: Mapping[str, Any]) -> str | None:
    """The speaker the sender gave in ``chat.speaker`` (None when it was read from a "Name:" prefix)."""
    if timeline.get("speaker_source") == NAME_PREFIX:
        return None
    return timeline.get("speaker")


def with_candidate(timeline: dict[str, Any], text: str | None) -> dict[str, Any]:
    """A chat turn's timeline with its speaker candidate, when it has no speaker field and a name prefix."""
    if timeline.get("speaker") or not text:
        return timeline
    name = prefixed_name(text)
    return {**timeline, "speaker_candidate": name} if name else timeline


def _known(conn: Connection, name: str, batch: set[int]) -> tuple[bool, list[int]]:
    """(is ``name`` a stored speaker, the stored turns that wait with it as their candidate), outside ``batch``."""
    speaker = any(rowid not in batch for rowid in stored_speakers.turns_spoken_by(conn, name, len(batch) + 1))
    waiting = [rowid for rowid in stored_speakers.turns_waiting_for(conn, name) if rowid not in batch]
    return speaker, waiting


def _accept(timeline: dict[str, Any]) -> None:
    timeline["speaker"] = timeline.pop("speaker_candidate")
    timeline["speaker_source"] = NAME_PREFIX


def _metadata_json(metadata: Mapping[str, Any]) -> str:
    return compact_json(metadata)


def settle(conn: Connection, inserted: Sequence[tuple[int, MemoryEvent]],
           link: Callable[[Connection, list[tuple[int, Any]]], Any]) -> int:
    """Accept the speaker candidates of the just inserted turns (``(rowid, event)``) whose name recurs, and the
    stored turns waiting with an accepted name. Runs inside the write transaction, after the insert and
    before the batch is linked to its entities: the batch's events are changed in place (and in their rows)
    so that linking sees their speaker; the waiting turns are updated and linked here through ``link``.
    A duplicate is not inserted, so the same turn sent twice never makes its name recur. Returns how many
    turns got a speaker."""
    by_name: dict[str, list[tuple[int, MemoryEvent]]] = {}
    for rowid, event in inserted:
        name = event.metadata.get("timeline", {}).get("speaker_candidate")
        if name:
            by_name.setdefault(name, []).append((rowid, event))
    batch = {rowid for rowid, _ in inserted}
    settled = 0
    for name, turns in by_name.items():
        known, waiting = _known(conn, name, batch)
        if not (known or waiting or len(turns) > 1):
            continue                                   # a first turn: it waits for the name to recur
        for _, event in turns:
            _accept(event.metadata["timeline"])
        stored_speakers.set_metadata(conn, [(_metadata_json(event.metadata), rowid) for rowid, event in turns])
        settled += len(turns) + len(waiting)
        _settle_stored(conn, waiting, link)
    return settled


def _settle_stored(conn: Connection, rowids: list[int],
                   link: Callable[[Connection, list[tuple[int, Any]]], Any]) -> None:
    for rowid in rowids:
        metadata_json, content = stored_speakers.metadata_and_content(conn, rowid)
        metadata = json.loads(metadata_json)
        _accept(metadata["timeline"])
        stored_speakers.set_metadata(conn, [(_metadata_json(metadata), rowid)])
        # The linker reads an event's metadata and content only; the speaker becomes a person link.
        link(conn, [(rowid, SimpleNamespace(metadata=metadata, content=content))])
        # L2 held back what the turn says of its speaker while the name was only a candidate: project again.
        stored_speakers.project_again(conn, rowid)


def speaking_names(conn: Connection, named: Sequence[tuple[int, str, str]]) -> set[str]:
    """The name keys of the entities a question names (``(entity_id, type, key)``) that lead a chat turn as
    its speaker: those pick *whose* turns; any other name (a place, a band, a hobby L2 made an entity) stays
    a search word."""
    if not named:
        return set()
    names = stored_entities.names_and_keys(conn, [entity_id for entity_id, _, _ in named])
    return {key for name, key in names if stored_speakers.has_spoken(conn, name)}
