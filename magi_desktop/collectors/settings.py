"""Which collectors run, with what settings: ``collectors.json`` in the data folder.

    {
      "paused": false,
      "exclusions": {"domains": ["bank.example"], "apps": ["keepassxc"], "repositories": [], "paths": []},
      "collectors": {
        "browser": {"enabled": true, "settings": {"backfill_days": 30}},
        "git": {"enabled": true, "settings": {"repositories": ["~/src/magi"]}},
        "terminal": {"enabled": true, "aggregate": false}
      }
    }

``aggregate`` (browser, terminal, music; default true) folds a collector's events into hourly activity blocks
(core/aggregation); false keeps each one on its own in window lists and summaries. Collectors are off until
enabled here (reading a browser history or a shell
history is the user's call, not a default). A malformed file is an error that
names the bad field; the app then runs no collector rather than guessing.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.aggregation.rules import RULE_NAMES
from ..core.errors import InvalidInput
from ..core.storable import is_storable as is_text  # app_settings.py uses it by this name too
from ..plugin_api import Unavailable

log = logging.getLogger(__name__)

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
        if "aggregate" in entry:         # fold its events into hourly activity blocks (core/aggregation)
            if not isinstance(entry["aggregate"], bool):
                raise SettingsError(path, f"collectors.{name}.aggregate", "must be true or false")
            if name not in RULE_NAMES:
                raise SettingsError(path, f"collectors.{name}.aggregate",
                                    f"only {', '.join(RULE_NAMES)} have events to fold into activity blocks")
        settings = entry.get("settings", {})
        if not isinstance(settings, dict):
            raise SettingsError(path, f"collectors.{name}.settings", "must be an object")
        if entry.get("enabled", False):
            enabled[name] = settings
    entries = {name: {"enabled": bool(entry.get("enabled", False)), "settings": dict(entry.get("settings", {})),
                      **({"aggregate": entry["aggregate"]} if "aggregate" in entry else {})}
               for name, entry in collectors.items()}
    return CollectorSettings(paused=paused, exclusions=exclusions, enabled=enabled, entries=entries)


def save_settings(data_folder: Path, settings: CollectorSettings) -> Path:
    """Write ``collectors.json`` whole (a temporary file renamed over it), readable by the user only."""
    path = settings_path(data_folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"paused": settings.paused,
            "exclusions": {kind: list(settings.exclusions.get(kind, [])) for kind in EXCLUSION_KINDS},
            "collectors": {name: {"enabled": bool(entry.get("enabled")), "settings": dict(entry.get("settings", {})),
                                  **({"aggregate": entry["aggregate"]} if "aggregate" in entry else {})}
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


# A collector declares its settings as a dict of properties (``settings_schema``), each a JSON Schema of its own:
# {"type", "title", "description", "default", "items", "enum", "minimum", …, and "required": true}. The host turns
# it into one JSON Schema (:func:`json_schema`) and checks the user's settings with a real validator.
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def json_schema(collector: Any) -> dict[str, Any]:
    """A collector's ``settings_schema`` as a JSON Schema (draft 2020-12): an object of the declared properties
    and no others, those marked ``"required": true`` required. A property whose own schema is not valid JSON
    Schema (a plugin's typo: ``"type": "path"``) is kept unchecked rather than failing the plugin."""
    from jsonschema import Draft202012Validator, SchemaError

    properties: dict[str, Any] = {}
    required: list[str] = []
    for key, spec in dict(getattr(collector, "settings_schema", {}) or {}).items():
        spec = dict(spec) if isinstance(spec, Mapping) else {}
        if isinstance(spec.get("required"), bool):     # the property's own mark; a list is an object's JSON Schema
            if spec.pop("required"):
                required.append(key)
        try:
            Draft202012Validator.check_schema({"$schema": JSON_SCHEMA_DIALECT, **spec})
        except SchemaError as exc:
            log.warning("collector %s: setting %s has a schema that is not JSON Schema (%s); it is not checked",
                        getattr(collector, "name", "?"), key, exc.message)
            spec = {k: v for k, v in spec.items() if k in ("title", "description", "default")}
        properties[key] = spec
    schema: dict[str, Any] = {"$schema": JSON_SCHEMA_DIALECT, "title": str(getattr(collector, "name", "")),
                              "type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def with_defaults(collector: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a run sees: the user's, and each declared ``default`` where the user set nothing."""
    out = {key: spec["default"] for key, spec in dict(getattr(collector, "settings_schema", {}) or {}).items()
           if isinstance(spec, Mapping) and "default" in spec}
    out.update(values)
    return out


def missing_required(collector: Any, values: Mapping[str, Any]) -> list[str]:
    """The required settings the user has not set (and that have no default): the collector cannot run."""
    return [key for key in json_schema(collector).get("required", []) if key not in with_defaults(collector, values)]


def unset_required(collector: Any, values: Mapping[str, Any]) -> Unavailable | None:
    """Why a collector cannot run with these settings — a required one unset, by its title — or None. The host
    then does not call ``collect``: the collector is unavailable until the user sets it."""
    missing = missing_required(collector, values)
    if not missing:
        return None
    return Unavailable(f"{', '.join(title_of(collector, key) for key in missing)} not set",
                       f"set it in Settings (collectors.json: collectors.{collector.name}.settings.{missing[0]})")


def title_of(collector: Any, key: str) -> str:
    """A setting as the user sees it named: its ``title``, else the key made readable ("min_play_seconds" → "Min
    play seconds")."""
    spec = dict(getattr(collector, "settings_schema", {}) or {}).get(key)
    title = spec.get("title") if isinstance(spec, Mapping) else None
    return str(title) if title else key.replace("_", " ").strip().capitalize()


_TYPE_WORDS = {"string": "a string", "array": "an array", "number": "a number", "integer": "an integer",
               "boolean": "a boolean", "object": "an object", "null": "null"}


def check_settings(data_folder: Path, collector: Any, values: dict[str, Any]) -> None:
    """A collector's settings must be ones it declares, valid against its JSON Schema ("paths": "~/cal" is not a
    list). A required setting left unset is not an error here: the collector shows *unavailable* with it named."""
    path = settings_path(data_folder)
    schema = json_schema(collector)
    declared = schema["properties"]
    for key, value in values.items():
        if key not in declared:
            where = f"collectors.{collector.name}.settings.{setting_name(key)}"
            raise SettingsError(path, where, f"unknown setting; {collector.name} takes {', '.join(declared) or 'none'}")
        bad = _not_storable(value)
        if bad:
            raise SettingsError(path, f"collectors.{collector.name}.settings.{key}", bad)
    # A required setting unset is said by the collector's health (unavailable), not here; an object's own
    # required keys are checked like anything else.
    errors = [e for e in _validator()(schema).iter_errors(values) if e.validator != "required" or e.absolute_path]
    if not errors:
        return
    error = min(errors, key=lambda e: (list(e.absolute_path), e.validator))
    key = str(error.absolute_path[0]) if error.absolute_path else ""
    where = f"collectors.{collector.name}.settings" + (f".{key}" if key else "")
    if error.validator == "type" and len(error.absolute_path) == 1:
        kinds = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        message = "must be " + " or ".join(_TYPE_WORDS.get(k, str(k)) for k in kinds)
    elif error.validator == "type":
        message = f"must be a list of {error.validator_value}s"
    else:
        message = error.message
    raise SettingsError(path, where, message)


@functools.cache
def _validator() -> Any:
    """Draft 2020-12, except that an integer setting is an int: JSON Schema takes 3.0 for one, and a plugin's
    ``range(ctx.settings["days"])`` would then fail in the collector instead of in the user's settings."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool))
    return validators.extend(Draft202012Validator, type_checker=checker)


def _not_storable(value: Any) -> str | None:
    """What JSON Schema cannot see but the memory refuses: NaN and infinities, NUL characters, lone surrogates."""
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number"   # JSON's NaN, Infinity, 1e999
    if isinstance(value, str) and not is_text(value):
        return "must be text without NUL characters or lone surrogates"
    if isinstance(value, list):
        for item in value:
            bad = _not_storable(item)
            if bad:
                return "must be a list of " + bad.removeprefix("must be ").replace("a finite number", "finite numbers")
    return None
