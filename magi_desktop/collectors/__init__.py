"""The host side of plugins: hookspecs, discovery (built-ins and entry points) and, next, the collector supervisor."""

from .manager import DEFAULT_PLUGINS, ENTRY_POINT_GROUP, PluginInfo, Plugins, load_plugins

__all__ = ["DEFAULT_PLUGINS", "ENTRY_POINT_GROUP", "PluginInfo", "Plugins", "load_plugins"]
