"""The app's own settings (no Qt): ``settings.json`` in the data folder, the LLM the app uses,
where the data folder is, and starting with the session (autostart).

    {"llm": {"base_url": "http://localhost:11434/v1", "model": "qwen2.5:7b",
             "tier_models": {"reasoning": "qwen2.5:14b"}},
     "autostart": false,
     "mcp_http": {"enabled": false, "port": 8737}}

The API key is never in this file: it lives in the OS keyring (service ``magi-desktop``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .agents.http import DEFAULT_PORT
from .collectors.settings import SettingsFileError, is_text, read_json_object, setting_name, write_private
from .core.errors import InvalidInput
from .core.llm.openai import TIERS, OpenAICompatibleLLM, OpenAISettings
from .core.paths import APP_NAME

FILE_NAME = "settings.json"
DEFAULT_HTTP_PORT = DEFAULT_PORT        # the app's HTTP server and `magi mcp`'s agree
DESKTOP_ENTRY = """[Desktop Entry]
Type=Application
Name=Magi Desktop
Comment=Local-first memory for people who work with AI agents
Exec={command}
Icon=magi-desktop
Terminal=false
X-GNOME-Autostart-enabled=true
"""


class AppSettingsError(SettingsFileError):
    """settings.json is not what it must be."""


@dataclass
class AppSettings:
    llm_base_url: str = ""
    llm_model: str = ""
    tier_models: dict[str, str] = field(default_factory=dict)
    autostart: bool = False
    http_enabled: bool = False          # the app serves MCP over HTTP (agents/http.py), on loopback
    http_port: int = DEFAULT_HTTP_PORT

    def llm_settings(self) -> OpenAISettings | None:
        """The endpoint to use, or None for the offline rules. Raises InvalidInput if half-configured."""
        if not self.llm_base_url:
            return None
        return OpenAISettings(base_url=self.llm_base_url, model=self.llm_model,
                              tier_models={t: m for t, m in self.tier_models.items() if m})

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"autostart": self.autostart}
        if self.http_enabled or self.http_port != DEFAULT_HTTP_PORT:
            data["mcp_http"] = {"enabled": self.http_enabled, "port": self.http_port}
        if self.llm_base_url:
            data["llm"] = {"base_url": self.llm_base_url, "model": self.llm_model,
                           "tier_models": {t: m for t, m in self.tier_models.items() if m}}
        return data


def settings_path(data_folder: Path) -> Path:
    return Path(data_folder) / FILE_NAME


def load_app_settings(data_folder: Path) -> AppSettings:
    path = settings_path(data_folder)
    raw = read_json_object(path, AppSettingsError, {"llm", "autostart", "mcp_http"})
    if raw is None:
        return AppSettings()
    if not isinstance(raw.get("autostart", False), bool):
        raise AppSettingsError(path, "autostart", "must be true or false")
    llm = raw.get("llm", {})
    if not isinstance(llm, dict):
        raise AppSettingsError(path, "llm", "must be an object")
    for key in ("base_url", "model"):
        if not isinstance(llm.get(key, ""), str) or not is_text(llm.get(key, "")):
            raise AppSettingsError(path, f"llm.{key}", "must be a string")
    tiers = llm.get("tier_models", {})
    if not isinstance(tiers, dict) or not all(isinstance(v, str) and is_text(v) for v in tiers.values()):
        raise AppSettingsError(path, "llm.tier_models", "must map tiers to model names")
    for tier in tiers:
        if tier not in TIERS:
            raise AppSettingsError(path, f"llm.tier_models.{setting_name(tier)}",
                                   f"unknown tier; one of {', '.join(TIERS)}")
    http = raw.get("mcp_http", {})
    if not isinstance(http, dict) or set(http) - {"enabled", "port"}:
        raise AppSettingsError(path, "mcp_http", "must be an object with enabled and port")
    if not isinstance(http.get("enabled", False), bool):
        raise AppSettingsError(path, "mcp_http.enabled", "must be true or false")
    port = http.get("port", DEFAULT_HTTP_PORT)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise AppSettingsError(path, "mcp_http.port", "must be a TCP port (1-65535)")
    settings = AppSettings(llm.get("base_url", ""), llm.get("model", ""), dict(tiers), raw.get("autostart", False),
                           http.get("enabled", False), port)
    try:
        settings.llm_settings()
    except InvalidInput as exc:
        raise AppSettingsError(path, "llm", str(exc)) from None
    return settings


def save_app_settings(data_folder: Path, settings: AppSettings) -> Path:
    settings.llm_settings()            # refuse to write a half-configured endpoint
    path = settings_path(data_folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_private(path, json.dumps(settings.to_json(), indent=2, ensure_ascii=False) + "\n")
    return path


def llm_for(data_folder: Path, env: Mapping[str, str] | None = None) -> OpenAICompatibleLLM | str:
    """The provider the app runs: settings.json's endpoint, else ``MAGI_LLM_BASE_URL``, else the rules."""
    env = os.environ if env is None else env
    configured = load_app_settings(data_folder).llm_settings()
    if configured is not None:
        return OpenAICompatibleLLM(configured)
    if env.get("MAGI_LLM_BASE_URL"):
        return OpenAICompatibleLLM(OpenAISettings.from_env(env))
    return "rules"


# ------------------------------------------------------------------ autostart


def autostart_entry() -> Path:
    """Where the login entry lives on this platform."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "LaunchAgents" / "org.magi-desktop.plist"
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return config / "autostart" / f"{APP_NAME}.desktop"


def launch_args() -> list[str]:
    """The command that starts the app: the frozen executable, else this Python running ``magi app``."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "magi_desktop.cli", "app"]


def launch_command() -> str:
    return " ".join(f'"{arg}"' if " " in arg else arg for arg in launch_args())


def set_autostart(enabled: bool) -> None:
    """Start (or stop starting) the app with the user's session."""
    if sys.platform.startswith("win"):
        import winreg  # type: ignore[import-not-found]

        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, r"Software\Microsoft\Windows\CurrentVersion\Run", 0,
                            winreg.KEY_SET_VALUE) as key:
            if enabled:
                winreg.SetValueEx(key, "Magi Desktop", 0, winreg.REG_SZ, launch_command())
            else:
                try:
                    winreg.DeleteValue(key, "Magi Desktop")
                except FileNotFoundError:
                    pass
        return
    entry = autostart_entry()
    if not enabled:
        entry.unlink(missing_ok=True)
        return
    entry.parent.mkdir(parents=True, exist_ok=True)
    if sys.platform == "darwin":
        from xml.sax.saxutils import escape

        args = "".join(f"<string>{escape(part)}</string>" for part in launch_args())
        entry.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0"><dict>'
                         "<key>Label</key><string>org.magi-desktop</string>"
                         f"<key>ProgramArguments</key><array>{args}</array>"
                         "<key>RunAtLoad</key><true/></dict></plist>\n")
    else:
        entry.write_text(DESKTOP_ENTRY.format(command=launch_command()))


def autostart_enabled() -> bool:
    if sys.platform.startswith("win"):
        import winreg  # type: ignore[import-not-found]

        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, r"Software\Microsoft\Windows\CurrentVersion\Run") as key:
                winreg.QueryValueEx(key, "Magi Desktop")
            return True
        except FileNotFoundError:
            return False
    return autostart_entry().exists()
