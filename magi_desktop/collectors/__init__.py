"""The host side of plugins: hookspecs, discovery (built-ins and entry points) and the collector supervisor."""

from .manager import DEFAULT_PLUGINS, ENTRY_POINT_GROUP, PluginInfo, Plugins, load_plugins
from .supervisor import CollectorStatus, Supervisor

__all__ = ["DEFAULT_PLUGINS", "ENTRY_POINT_GROUP", "CollectorStatus", "PluginInfo", "Plugins", "Supervisor",
           "load_plugins"]
