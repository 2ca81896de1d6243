"""The plugin API: the one module a Magi Desktop plugin imports.

A plugin is a module (or package) with hook implementations::

    from magi_desktop.plugin_api import hookimpl, activity

    class Bookmarks:
        name = "bookmarks"
        source_type = "bookmarks"
        interval_seconds = 3600
        settings_schema = {"file": {"type": "string", "title": "Bookmarks file", "required": True,
                                    "description": "bookmarks.html to read"}}
        privacy_note = "Reads the titles and addresses of your bookmarks; nothing leaves this machine."

        def collect(self, since, ctx):
            for mark in read_bookmarks(ctx.settings["file"]):
                if mark.added > (since or 0):
                    yield activity("bookmarks", "add_bookmark", mark.added,
                                   {"url": mark.url, "title": mark.title}, item_id=mark.id)

    @hookimpl
    def register_collectors(register):
        register(Bookmarks())

and is installed with an entry point in the ``magi_desktop.plugins`` group
(see docs/plugins.md). Hooks receive a ``register`` callback rather than
returning values, and a hook implementation may take only the arguments it uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pluggy

__all__ = ["Collector", "CollectContext", "Unavailable", "activity", "entity", "hookimpl"]

hookimpl = pluggy.HookimplMarker("magi_desktop")


class Unavailable(Exception):
    """Raise from ``collect`` when nothing this collector reads can be read on this machine: ``reason`` says
    what is missing ("no window system", "playerctl not found"), ``fix`` what the user can do about it
    ("install playerctl"). It is not a failure: the collector shows *unavailable* with both, is tried again at
    its next interval and never moves towards quarantine. One source of several that cannot be read is
    ``ctx.unavailable(source, reason, fix)`` instead, and the run goes on."""

    def __init__(self, reason: str, fix: str | None = None):
        super().__init__(reason if fix is None else f"{reason} — {fix}")
        self.reason, self.fix = reason, fix


def entity(mention_text: str, entity_type: str) -> dict[str, str]:
    """An entity hint for a payload: a name the event mentions and its type ("person", "project"…)."""
    return {"mention_text": mention_text, "entity_type": entity_type}


def activity(source_type: str, action_code: str, occurred_at: float | str, provenance: Mapping[str, Any], *,
             item_id: str | None = None, entities: Iterable[Mapping[str, str]] = (), object_code: str | None = None,
             session_id: str | None = None, tags: Iterable[str] = (), schedule: Mapping[str, Any] | None = None,
             natural_key: str | None = None, retire: bool = False, actor: str | None = None) -> dict[str, Any]:
    """A sensor payload (architecture §3.1): what happened (``action_code``), when, and its raw fields.

    ``item_id`` is the source's own id for the item (a visit id, a commit hash): it makes
    re-collection idempotent. ``schedule`` ({"start", "end", "all_day"}) declares a planned event,
    visible before it happens. ``natural_key`` names the thing the item is a version of (a calendar
    UID and occurrence): a new version supersedes the stored one; ``retire`` retires it. ``actor``
    names who did it when that was not the user (a colleague's commit): the event reads "Ana
    committed …" and is Ana's activity, never the user's (it goes in ``provenance["actor"]``). The
    core validates the payload, redacts secrets, classifies and renders it; a plugin never writes
    memory fields itself.
    """
    payload: dict[str, Any] = {
        "source_type": source_type,
        "occurred_at": occurred_at,
        "activity": {"source_code": source_type, "action_code": action_code},
        "provenance": dict(provenance),
    }
    if actor is not None:
        payload["provenance"]["actor"] = actor
    if object_code is not None:
        payload["activity"]["object_code"] = object_code
    if item_id is not None:
        payload["source_item_id"] = item_id
    hints = [dict(e) for e in entities]
    if hints:
        payload["entities"] = hints
    if session_id is not None:
        payload["session_id"] = session_id
    tags = list(tags)
    if tags:
        payload["tags"] = tags
    if schedule is not None:
        payload["schedule"] = dict(schedule)
    if natural_key is not None:
        payload["natural_key"] = natural_key
    if retire:
        payload["retire"] = True
    return payload


@runtime_checkable
class CollectContext(Protocol):
    """What the host hands a collector on each run."""

    settings: Mapping[str, Any]          # this collector's settings (validated against its schema)

    def excluded(self, kind: str, value: str) -> bool:
        """Whether the user excluded this domain / app / repository / path ("kind" names the list)."""
        ...

    def save_cursor(self, value: Any) -> None:
        """Where the next run starts (a visit time, a commit hash). Kept once the payloads yielded
        before this call are stored; without it the newest ``occurred_at`` seen is the cursor."""
        ...

    def progress(self, done: int, total: int | None = None) -> None:
        """Report progress of a long run (a history back-fill)."""
        ...

    def source(self, name: str) -> None:
        """Name the source the payloads yielded from now on come from (a repository, a calendar file, a browser
        profile): health is shown per source — *collecting* when something new from it was stored, *idle* when
        it was read and nothing was new. Call it for each source the run reads, even one that yields nothing.
        A collector that never calls it has one source, itself."""
        ...

    def unavailable(self, source: str, reason: str, fix: str | None = None) -> None:
        """This source cannot be read on this machine — ``reason`` what is wrong ("no such repository: ~/src/x",
        "permission denied: …"), ``fix`` what the user can do. The run goes on with the other sources; it is no
        failure. When no source at all can be read, raise :class:`Unavailable` instead."""
        ...

    def failing(self, source: str, error: str) -> None:
        """Reading this source went wrong where it should have worked (git cannot read the repository): it
        shows *failing* with ``error``, named by the source. The run goes on with the other sources; an
        exception that ends the run is a failure of the whole collector (and counts towards quarantine)."""
        ...

    def skipped(self, reason: str, detail: str | None = None) -> None:
        """Count an item left out because it cannot be used (a broken event, an unreadable file, a binary
        line), by a short reason code such as ``"bad_dtstart"``; ``detail`` says where (a file, a line),
        not what it held. A skip is not a failure: the run goes on, stays ok and never moves the collector
        towards quarantine. The host shows the counts by reason (``magi collect``, ``magi status``)."""
        ...

    @property
    def temp_dir(self) -> Path:
        """A scratch folder for this run (copies of files the source keeps locked), inside the data folder.
        The host removes it when the run ends, and what a killed process left there at the next start."""
        ...

    @property
    def stopping(self) -> bool:
        """True when the host wants the collector to stop: check it in long loops."""
        ...


@runtime_checkable
class Collector(Protocol):
    """A source of activity. ``collect`` yields payloads newer than ``since`` (the last cursor)."""

    name: str                    # unique code, e.g. "browser"
    source_type: str             # the payloads' source_type; a collector writing several (one per browser)
                                 # lists the others in an optional ``source_types`` tuple. The host rejects
                                 # a payload naming any other: it could replace that source's events.
    interval_seconds: float      # how often the host runs it by default
    settings_schema: Mapping[str, Any]   # {key: a JSON Schema property: type, title, description, default, …,
                                         # "required": True}; the host validates and fills in the defaults
    privacy_note: str            # what it reads, in one or two sentences the user sees

    def collect(self, since: Any, ctx: CollectContext) -> Iterable[dict[str, Any]]:
        """Payloads since the cursor ``since`` (None on the first run)."""
        ...
