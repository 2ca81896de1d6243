"""Render an event's ``content`` from its structured fields.

Plugins describe *what* happened (activity + provenance fields); the core
writes the sentence, from one template per (source, action), so every source
reads the same way. A template has several forms, tried in order: the first
whose fields are all present (and non-empty) wins. Unknown actions get the
generic form, which still carries every scalar field so nothing is unsearchable.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

from .contracts import ACTOR, Payload, ToolRun, actor_of

ANY_SOURCE = "*"
_GENERIC_VALUE_CHARS = 200


@dataclass(frozen=True)
class _Form:
    """One template form, parsed once: the fields it needs and a plain format string."""

    fields: tuple[tuple[str, str], ...]  # (field, format spec or "")
    text: str                            # the form with specs moved into field names

    @classmethod
    def parse(cls, form: str) -> _Form:
        fields, parts = [], []
        for literal, name, spec, conversion in string.Formatter().parse(form):
            parts.append(literal.replace("{", "{{").replace("}", "}}"))
            if name is None:
                continue
            if not name.isidentifier() or conversion:
                raise ValueError(f"template fields must be plain names, got {name!r} in {form!r}")
            if spec and spec not in _SPECS:
                raise ValueError(f"unknown format {spec!r} in template {form!r}")
            fields.append((name, spec or ""))  # None only for a literal without a field
            parts.append("{" + (f"{name}__{spec}" if spec else name) + "}")
        return cls(tuple(fields), "".join(parts))

    def render(self, values: Mapping[str, Any]) -> str | None:
        """The filled form, or None when a field is absent or empty."""
        filled = {}
        for name, spec in self.fields:
            value = values.get(name)
            if value is None or value == "" or value == [] or value == {}:
                return None
            if spec:
                try:
                    filled[f"{name}__{spec}"] = _SPECS[spec](value)
                except (TypeError, ValueError, OverflowError, OSError):
                    return None  # e.g. a timestamp no calendar can show: try the next form
            elif isinstance(value, (list, tuple)):
                filled[name] = ", ".join(str(v) for v in value)
            else:
                filled[name] = value
        return self.text.format_map(filled)


@dataclass(frozen=True)
class Template:
    forms: tuple[str, ...]
    parsed: tuple[_Form, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if not self.forms:
            raise ValueError("a template needs at least one form")
        object.__setattr__(self, "parsed", tuple(_Form.parse(form) for form in self.forms))

    def render(self, values: Mapping[str, Any]) -> str | None:
        found = self.rendered(values)
        return found[0] if found is not None else None

    def rendered(self, values: Mapping[str, Any]) -> tuple[str, frozenset[str]] | None:
        """The first form that fills, and the fields it used."""
        for form in self.parsed:
            text = form.render(values)
            if text is not None:
                return text, frozenset(name for name, _ in form.fields)
        return None


def format_duration(seconds: float) -> str:
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def format_time(epoch: float) -> str:
    return datetime.fromtimestamp(float(epoch), tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


_SPECS = {
    "duration": format_duration,
    "duration_ms": lambda ms: format_duration(float(ms) / 1000),
    "time": format_time,
    "date": lambda epoch: datetime.fromtimestamp(float(epoch), tz=timezone.utc).strftime("%Y-%m-%d"),
}


# Templates for the first-party collectors (architecture §10); plugins register more.
BUILTIN_TEMPLATES: dict[tuple[str, str], Template] = {
    (ANY_SOURCE, "visit_page"): Template((
        "Visited “{title}” ({domain})",
        "Visited {url}",
    )),
    (ANY_SOURCE, "listen_music"): Template((
        "Listened to “{track_name}” by {artist_name} from “{album_name}” for {play_duration_sec:duration}",
        "Listened to “{track_name}” by {artist_name} for {play_duration_sec:duration}",
        "Listened to “{track_name}” by {artist_name}",
        "Listened to “{track_name}”",
    )),
    (ANY_SOURCE, "calendar_event"): Template((
        # An all-day event is named by its dates as the calendar wrote them (``day``, ``last_day``), not clock times.
        "All-day calendar event “{summary}” from {day} to {last_day} at {location}",
        "All-day calendar event “{summary}” from {day} to {last_day}",
        "All-day calendar event “{summary}” on {day} at {location}",
        "All-day calendar event “{summary}” on {day}",
        "Calendar event “{summary}” from {start:time} to {end:time} at {location}",
        "Calendar event “{summary}” from {start:time} to {end:time}",
        "Calendar event “{summary}” at {start:time}",
        "Calendar event “{summary}”",
    )),
    (ANY_SOURCE, "run_command"): Template((
        "Ran `{command}` in {cwd}",
        "Ran `{command}`",
    )),
    # Someone else's commit names them (``actor``, contracts.ACTOR); the paths make "which commits touched the
    # retrieval code?" findable by its words.
    (ANY_SOURCE, "git_commit"): Template((
        "{actor} committed to {repo} on branch {branch}: “{message}” ({files_changed} files changed: {paths} and "
        "{paths_more} more)",
        "{actor} committed to {repo} on branch {branch}: “{message}” ({files_changed} files changed: {paths})",
        "{actor} committed to {repo} on branch {branch}: “{message}” ({files_changed} files changed)",
        "{actor} committed to {repo} on branch {branch}: “{message}”",
        "{actor} committed to {repo}: “{message}”",
        "Committed to {repo} on branch {branch}: “{message}” ({files_changed} files changed: {paths} and "
        "{paths_more} more)",
        "Committed to {repo} on branch {branch}: “{message}” ({files_changed} files changed: {paths})",
        "Committed to {repo} on branch {branch}: “{message}” ({files_changed} files changed)",
        "Committed to {repo} on branch {branch}: “{message}”",
        "Committed to {repo}: “{message}”",
    )),
    (ANY_SOURCE, "git_branch_created"): Template((
        "Created branch {branch} in {repo}",
    )),
    # Activity blocks (core/aggregation): the many visits, commands or plays of one topic in one hour.
    (ANY_SOURCE, "browse_site"): Template((
        "Browsed {domain}: {visits} visits from {first_at:time} to {last_at:time} — {top}",
        "Browsed {domain}: {visits} visits",
    )),
    (ANY_SOURCE, "run_commands"): Template((
        "Ran {program} {commands} times from {first_at:time} to {last_at:time}: {top}",
        "Ran {program} {commands} times",
    )),
    (ANY_SOURCE, "listen_artist"): Template((
        "Listened to {artist_name}: {plays} plays for {total_sec:duration} from {first_at:time} to {last_at:time} "
        "— {top}",
        "Listened to {artist_name}: {plays} plays from {first_at:time} to {last_at:time} — {top}",
        "Listened to {artist_name}: {plays} plays",
    )),
    (ANY_SOURCE, "use_app"): Template((
        "Used {app_name} for {duration_sec:duration} (“{window_title}”)",
        "Used {app_name} for {duration_sec:duration}",
        "Used {app_name}",
    )),
}

BUILTIN_SOURCE_LABELS: dict[str, str] = {
    "chrome": "Chrome", "chromium": "Chromium", "edge": "Edge", "brave": "Brave", "firefox": "Firefox",
    "vivaldi": "Vivaldi", "opera": "Opera", "opera_gx": "Opera GX", "arc": "Arc",
    "browser": "Browser", "calendar": "Calendar", "terminal": "Terminal", "git": "Git",
    "music": "Music", "app_usage": "App usage", "netease_music": "NetEase Music",
}


_HOST = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://(?:[^@/?#]*@)?([^/:?#]+)")


def hostname(url: str) -> str:
    """The host of a URL, also when redaction left brackets in its user-info."""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        match = _HOST.match(url)
        return match.group(1).lower() if match else ""


def _humanise(code: str) -> str:
    words = code.replace("_", " ").replace("-", " ").replace(".", " ").strip()
    return words[:1].upper() + words[1:]


def _compact(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    text = " ".join(text.split())
    return text if len(text) <= _GENERIC_VALUE_CHARS else text[: _GENERIC_VALUE_CHARS - 1] + "…"


class TemplateRegistry:
    """Templates keyed by (source, action); ``*`` as source matches any source."""

    def __init__(self, templates: Mapping[tuple[str, str], Template] | None = None,
                 source_labels: Mapping[str, str] | None = None):
        self._templates = dict(BUILTIN_TEMPLATES if templates is None else templates)
        self._labels = dict(BUILTIN_SOURCE_LABELS if source_labels is None else source_labels)

    def register(self, source: str, action: str, *forms: str) -> None:
        self._templates[(source, action)] = Template(tuple(forms))

    def register_source_label(self, source: str, label: str) -> None:
        self._labels[source] = label

    def source_label(self, source: str) -> str:
        return self._labels.get(source) or _humanise(source)

    def lookup(self, sources: Iterable[str], action: str) -> Template | None:
        for source in (*sources, ANY_SOURCE):
            template = self._templates.get((source, action))
            if template is not None:
                return template
        return None

    # ---------------------------------------------------------------- render

    def render(self, payload: Payload) -> str:
        # validate_payload gives a payload exactly the body its kind names (chat, action or activity).
        if payload.chat is not None:
            return payload.chat.text
        if payload.action is not None:
            return self._render_tool_run(payload.source_type, payload.action)
        return self._render_activity(payload)

    def _render_activity(self, payload: Payload) -> str:
        activity = payload.activity
        assert activity is not None
        fields = dict(payload.provenance)
        fields.setdefault("source_type", payload.source_type)
        fields.setdefault("action_code", activity.action_code)
        fields.setdefault("object_code", activity.object_code)
        url = fields.get("url")
        if isinstance(url, str) and "domain" not in fields:
            fields["domain"] = hostname(url)
        prefix = self.source_label(payload.source_type)
        template = self.lookup((payload.source_type, activity.source_code), activity.action_code)
        found = template.rendered(fields) if template is not None else None
        if found is None:
            return f"{prefix}: {self._generic(activity.action_code, activity.object_code, payload.provenance)}"
        text, used = found
        actor = actor_of(payload.provenance)
        if actor is not None and ACTOR not in used:
            text += f" (by {actor})"     # a template that does not say who must not make it read as the user's
        return f"{prefix}: {text}"

    @staticmethod
    def _generic(action: str, object_code: str | None, provenance: Mapping[str, Any]) -> str:
        head = _humanise(action).lower()
        if object_code:
            head += f" ({_humanise(object_code).lower()})"
        details = [
            f"{_humanise(key).lower()}: {_compact(value)}"
            for key, value in provenance.items()
            if value not in (None, "", [], {})
        ]
        return head + (" — " + "; ".join(details) if details else "")

    def _render_tool_run(self, source: str, run: ToolRun) -> str:
        took = ""
        if run.duration_ms is not None:
            ms = run.duration_ms
            took = f" in {ms:.0f} ms" if ms < 1000 else f" in {format_duration(ms / 1000)}"
        where = f"{run.tool} ({run.category})"
        if run.ok:
            return f"Tool {where} succeeded{took}"
        error = f": {_compact(run.error)}" if run.error else ""
        return f"Tool {where} failed{took}{error}"
