"""The host side of plugins: hookspecs, discovery (built-ins and entry points) and the collector supervisor."""

from .manager import DEFAULT_PLUGINS, ENTRY_POINT_GROUP, PluginInfo, Plugins, load_plugins
from .settings import CollectorSettings, SettingsError, check_settings, load_settings, save_settings
from .supervisor import CollectorStatus, Supervisor

__all__ = ["DEFAULT_PLUGINS", "ENTRY_POINT_GROUP", "CollectorSettings", "CollectorStatus", "PluginInfo", "Plugins",
           "SettingsError", "Supervisor", "build_supervisor", "check_settings", "load_plugins", "load_settings",
           "save_settings", "use_aggregation_settings", "use_plugin_templates"]


def use_plugin_templates(memory, env=None, plugins=None) -> None:
    """Render the plugins' events with their own templates (``register_templates``) in this memory: wherever events
    are written — collecting, `magi ingest`, `magi import` re-rendering an export — not only where collectors run.
    A plugin that fails to load costs only its templates (``magi plugins`` says why)."""
    plugins = load_plugins(env) if plugins is None else plugins
    for source, action, forms in plugins.templates():
        memory.templates.register(source, action, *forms)


def use_aggregation_settings(memory, settings: CollectorSettings) -> None:
    """A collector's ``aggregate`` in collectors.json is the memory's choice for its aggregation rule (kept in the
    memory, so `magi ingest` and the MCP server fold as the collectors' settings say)."""
    current = memory.aggregation_settings()
    for name, entry in settings.entries.items():
        if "aggregate" in entry and current.get(name) != entry["aggregate"]:
            memory.set_aggregation(name, entry["aggregate"])


def build_supervisor(memory, data_folder, env=None, watch=False):
    """A supervisor over the enabled collectors (None when none is enabled), and what went wrong loading them.
    ``watch`` starts watching the files collectors name (the app; not a one-off ``magi collect``)."""
    import logging

    settings = load_settings(data_folder)
    use_aggregation_settings(memory, settings)
    plugins = load_plugins(env)
    use_plugin_templates(memory, plugins=plugins)   # what the collectors store reads as its plugin says
    collectors = [c for c in plugins.collectors() if c.name in settings.enabled]
    # A collector whose settings are wrong is unavailable, saying which and why; the others still run.
    invalid: dict[str, str] = {}
    for collector in collectors:
        try:
            check_settings(data_folder, collector, settings.enabled[collector.name])
        except SettingsError as exc:
            invalid[collector.name] = f"{exc.where}: {str(exc).rsplit(f'{exc.where}: ', 1)[-1]}"
            plugins.errors[f"collector {collector.name}"] = f"settings not valid: {invalid[collector.name]}"
    for name in sorted(set(settings.enabled) - {c.name for c in collectors}):
        plugins.errors[f"collector {name}"] = "enabled in collectors.json but no plugin registers it"
    for name, error in plugins.errors.items():
        logging.getLogger(__name__).warning("plugin %s: %s", name, error)
    if not collectors:
        from ..core.paths import temp_dir
        from .scratch import clean

        clean(temp_dir(data_folder))   # no collector will run, but one that ran before may have left copies
        return None, plugins.errors
    supervisor = Supervisor(memory, collectors, settings=settings.enabled, exclusions=settings.exclusions,
                            versions={c.name: plugins.version_of(c.name) for c in collectors},
                            invalid_settings=invalid)
    supervisor.paused = settings.paused
    if watch:
        try:
            supervisor.watch()
        except Exception as exc:  # noqa: BLE001 - no inotify left, say: the intervals still collect
            plugins.errors["watching"] = f"{type(exc).__name__}: {exc}"
    return supervisor, plugins.errors
