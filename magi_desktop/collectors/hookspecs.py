"""The hooks a plugin may implement (pluggy hookspecs, project marker "magi_desktop")."""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("magi_desktop")


@hookspec
def register_collectors(register):
    """Register collectors: call ``register(collector)`` for each."""


@hookspec
def register_templates(register):
    """Register how the plugin's actions read: ``register(source_type, action_code, *templates)``."""
