"""Magi Desktop: a local-first memory for people who work with AI agents.

Kept light on purpose: plugins import ``magi_desktop.plugin_api``, which loads this.
"""

__version__ = "0.1.0"
