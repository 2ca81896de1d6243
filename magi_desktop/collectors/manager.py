"""Finding plugins: built-ins by import path, third-party ones through entry points.

``MAGI_LOAD_PLUGINS`` controls what loads: unset loads everything; a comma list
names the plugins allowed ("browser,my-notes"); a name with a leading minus is
denied ("-terminal"); "none" loads no plugin at all. A plugin that fails to
import, or implements a hook that does not exist, is left out and reported —
it never stops the others.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy

from ..plugin_api import Collector
from . import hookspecs

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "magi_desktop.plugins"
# First-party plugins, registered by import path so a frozen build without entry-point metadata
# still has them. The collectors of the plugin issue add themselves here.
DEFAULT_PLUGINS: tuple[str, ...] = ("magi_plugins.browser", "magi_plugins.git", "magi_plugins.terminal",
                                    "magi_plugins.music", "magi_plugins.app_usage", "magi_plugins.calendar")


@dataclass
class PluginInfo:
    name: str
    version: str | None
    hooks: list[str]
    source: str                    # "built-in" | "entry point <dist>"


@dataclass
class Plugins:
    """The loaded plugins, what they registered, and what failed to load."""

    manager: pluggy.PluginManager
    info: list[PluginInfo] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)    # collector name -> the plugin that registered it

    def collectors(self) -> list[Collector]:
        found: dict[str, Collector] = {}
        plugin = ""

        def register(collector: Any) -> None:
            problem = _collector_problem(collector)
            if problem:
                self.errors[f"collector {getattr(collector, 'name', repr(collector))}"] = problem
            elif collector.name in found:
                self.errors[f"collector {collector.name}"] = "registered twice; the first one is kept"
            else:
                found[collector.name] = collector
                self.origins[collector.name] = plugin

        for name, call in self._each_impl("register_collectors"):
            plugin = name
            try:
                call(register=register)
            except Exception as exc:  # noqa: BLE001 - one plugin's bug must not hide the others
                self.errors[name] = f"register_collectors failed: {type(exc).__name__}: {exc}"
        return list(found.values())

    def version_of(self, collector: str) -> str | None:
        """The version of the plugin that registered a collector (None when unknown)."""
        plugin = self.origins.get(collector)
        return next((p.version for p in self.info if p.name == plugin), None)

    def templates(self) -> list[tuple[str, str, tuple[str, ...]]]:
        found: list[tuple[str, str, tuple[str, ...]]] = []

        def register(source_type: str, action_code: str, *forms: str) -> None:
            found.append((source_type, action_code, forms))

        for name, call in self._each_impl("register_templates"):
            try:
                call(register=register)
            except Exception as exc:  # noqa: BLE001
                self.errors[name] = f"register_templates failed: {type(exc).__name__}: {exc}"
        return found

    def _each_impl(self, hook: str):
        """Each plugin's implementation alone, so one that raises does not stop the rest."""
        for impl in getattr(self.manager.hook, hook).get_hookimpls():
            def call(_impl=impl, **kwargs):
                wanted = {k: v for k, v in kwargs.items() if k in _impl.argnames}
                return _impl.function(**wanted)
            yield impl.plugin_name, call


def _collector_problem(collector: Any) -> str | None:
    for attribute in ("name", "source_type", "interval_seconds", "settings_schema", "privacy_note"):
        if not hasattr(collector, attribute):
            return f"has no {attribute}"
    if not callable(getattr(collector, "collect", None)):
        return "has no collect(since, ctx)"
    if not isinstance(collector.name, str) or not collector.name.strip():
        return "name must be a non-empty string"
    return None


def _allowed(name: str, rule: str | None) -> bool:
    if rule is None or not rule.strip():
        return True
    entries = [e.strip() for e in rule.split(",") if e.strip()]
    if entries == ["none"]:
        return False
    denied = {e[1:] for e in entries if e.startswith("-")}
    allowed = {e for e in entries if not e.startswith("-")}
    return name not in denied and (not allowed or name in allowed)


def load_plugins(env: Mapping[str, str] | None = None, *, entry_points: bool = True,
                 defaults: tuple[str, ...] = DEFAULT_PLUGINS) -> Plugins:
    env = os.environ if env is None else env
    rule = env.get("MAGI_LOAD_PLUGINS")
    pm = pluggy.PluginManager("magi_desktop")
    pm.add_hookspecs(hookspecs)
    plugins = Plugins(pm)
    try:
        own_version = metadata.version("magi-desktop")
    except metadata.PackageNotFoundError:   # a frozen build without metadata
        own_version = None
    for path in defaults:
        short = path.rsplit(".", 1)[-1]
        if _allowed(short, rule):
            _register(plugins, short, lambda p=path: importlib.import_module(p), "built-in", own_version)
    if entry_points:
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if _allowed(ep.name, rule) and pm.get_plugin(ep.name) is None:
                dist = getattr(ep, "dist", None)
                _register(plugins, ep.name, ep.load, f"entry point {dist.name if dist else '?'}",
                          dist.version if dist else None)
    return plugins


def _register(plugins: Plugins, name: str, load, source: str, version: str | None) -> None:
    pm = plugins.manager
    try:
        module = load()
        pm.register(module, name=name)
    except Exception as exc:  # noqa: BLE001 - a broken plugin is reported, not fatal
        plugins.errors[name] = f"could not load: {type(exc).__name__}: {exc}"
        log.warning("plugin %s could not load: %s", name, exc)
        return
    try:
        pm.check_pending()   # a hook that does not exist is a typo or a version mismatch
    except pluggy.PluginValidationError as exc:
        pm.unregister(name=name)
        plugins.errors[name] = f"rejected: {exc}"
        log.warning("plugin %s rejected: %s", name, exc)
        return
    hooks = sorted(h.name for h in pm.get_hookcallers(pm.get_plugin(name)) or ())
    plugins.info.append(PluginInfo(name=name, version=version or getattr(module, "__version__", None),
                                   hooks=hooks, source=source))
