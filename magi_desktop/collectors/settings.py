"""Which collectors run, with what settings: ``collectors.json`` in the data folder.

    {
      "paused": false,
      "exclusions": {"domains": ["bank.example"], "apps": ["keepassxc"], "repositories": [], "paths": []},
      "collectors": {
        "browser": {"enabled": true, "settings": {"backfill_days": 30}},
        "git": {"enabled": true, "settings": {"repositories": ["~/src/magi"]}}
      }
    }

Collectors are off until enabled here (reading a browser history or a shell
history is the user's call, not a default). A malformed file is an error that
names the bad field; the app then runs no collector rather than guessing.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import InvalidInput
from ..core.storable import is_storable as is_text  # app_settings.py uses it by this name too

FILE_NAME = "collectors.json"
EXCLUSION_KINDS = ("domains", "apps", "repositories", "paths")


class SettingsFileError(InvalidInput):
    """A settings file is not what it must be: ``where`` names the setting."""

    def __init__(self, path: Path, where: str, message: str):
        super().__init__(f"{path}: {where}: {message}")
        self.where = where


class SettingsError(SettingsFileError):
    """collectors.json is not what it must be."""


def read_json_object(path: Path, error: type[SettingsFileError], known: set[str]) -> dict[str, Any] | None:
    """The JSON object a settings file holds, None when there is no file; ``error`` for anything else, a key
    not in ``known`` too."""
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(path, "file", f"not readable JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise error(path, "file", "must be a JSON object")
    unknown = set(raw) - known
    if unknown:
        raise error(path, setting_name(sorted(unknown)[0]), "unknown setting")
    return raw


@dataclass
class CollectorSettings:
    paused: bool = False
    exclusions: dict[str, list[str]] = field(default_factory=dict)
    enabled: dict[str, dict[str, Any]] = field(default_factory=dict)   # name -> its settings
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)   # every collector named: enabled, settings


def settings_path(data_folder: Path) -> Path:
    return Path(data_folder) / FILE_NAME


def load_settings(data_folder: Path) -> CollectorSettings:
    path = settings_path(data_folder)
    raw = read_json_object(path, SettingsError, {"paused", "exclusions", "collectors"})
    if raw is None:
        return CollectorSettings()
    paused = raw.get("paused", False)
    if not isinstance(paused, bool):
        raise SettingsError(path, "paused", "must be true or false")
    exclusions = raw.get("exclusions", {})
    if not isinstance(exclusions, dict):
        raise SettingsError(path, "exclusions", "must be an object")
    for kind, values in exclusions.items():
        if kind not in EXCLUSION_KINDS:
            raise SettingsError(path, f"exclusions.{setting_name(kind)}",
                                f"unknown list; one of {', '.join(EXCLUSION_KINDS)}")
        if not isinstance(values, list) or not all(isinstance(v, str) and is_text(v) for v in values):
            raise SettingsError(path, f"exclusions.{kind}", "must be a list of strings")
    collectors = raw.get("collectors", {})
    if not isinstance(collectors, dict):
        raise SettingsError(path, "collectors", "must be an object")
    enabled = {}
    for name, entry in collectors.items():
        if not _PLAIN.match(name):
            raise SettingsError(path, f"collectors.{setting_name(name)}", "is not a collector name")
        if not isinstance(entry, dict):
            raise SettingsError(path, f"collectors.{name}", "must be an object")
        if not isinstance(entry.get("enabled", False), bool):
            raise SettingsError(path, f"collectors.{name}.enabled", "must be true or false")
        settings = entry.get("settings", {})
        if not isinstance(settings, dict):
            raise SettingsError(path, f"collectors.{name}.settings", "must be an object")
        if entry.get("enabled", False):
            enabled[name] = settings
    entries = {name: {"enabled": bool(entry.get("enabled", False)), "settings": dict(entry.get("settings", {}))}
               for name, entry in collectors.items()}
    return CollectorSettings(paused=paused, exclusions=exclusions, enabled=enabled, entries=entries)


def save_settings(data_folder: Path, settings: CollectorSettings) -> Path:
    """Write ``collectors.json`` whole (a temporary file renamed over it), readable by the user only."""
    path = settings_path(data_folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"paused": settings.paused,
            "exclusions": {kind: list(settings.exclusions.get(kind, [])) for kind in EXCLUSION_KINDS},
            "collectors": {name: {"enabled": bool(entry.get("enabled")), "settings": dict(entry.get("settings", {}))}
                           for name, entry in sorted(settings.entries.items())}}
    write_private(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path


_PLAIN = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def setting_name(key: str) -> str:
    """A key as an error names it: as written when it reads as a name, else its escaped repr ("" → '')."""
    return key if _PLAIN.match(key) else repr(key)[:40]


def write_private(path: Path, text: str) -> None:
    import os

    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str, "array": list, "number": (int, float), "integer": int, "boolean": bool, "object": dict}


def _has_type(value: object, kind: str) -> bool:
    """``value`` is of the schema type ``kind`` (JSON Schema's sense: a bool is not a number)."""
    return not (isinstance(value, bool) and kind in ("number", "integer")) and isinstance(value, _TYPES[kind])


def check_settings(data_folder: Path, collector: Any, values: dict[str, Any]) -> None:
    """A collector's settings must be ones it declares, of the declared type ("paths": "~/cal" is not a list)."""
    path = settings_path(data_folder)
    schema = dict(getattr(collector, "settings_schema", {}) or {})
    for key, value in values.items():
        where = f"collectors.{collector.name}.settings.{key}"
        if key not in schema:
            where = f"collectors.{collector.name}.settings.{setting_name(key)}"
            raise SettingsError(path, where, f"unknown setting; {collector.name} takes {', '.join(schema) or 'none'}")
        kind = schema[key].get("type") if isinstance(schema[key], dict) else None
        if not isinstance(kind, str) or kind not in _TYPES:
            continue
        if not _has_type(value, kind):
            raise SettingsError(path, where, f"must be {'an' if kind[0] in 'aeio' else 'a'} {kind}")
        if kind in ("number", "integer") and not math.isfinite(value):
            raise SettingsError(path, where, "must be a finite number")   # JSON's NaN, Infinity, 1e999
        if kind == "string" and not is_text(value):
            raise SettingsError(path, where, "must be text without NUL characters or lone surrogates")
        items = schema[key].get("items", {}).get("type") if kind == "array" else None
        if items in _TYPES and not all(isinstance(v, _TYPES[items]) for v in value):
            raise SettingsError(path, where, f"must be a list of {items}s")
        if items == "string" and not all(is_text(v) for v in value):
            raise SettingsError(path, where, "must be a list of text without NUL characters or lone surrogates")
