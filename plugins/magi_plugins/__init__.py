"""First-party collectors of Magi Desktop. Each module is a plugin (see docs/plugins.md)."""
