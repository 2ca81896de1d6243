"""Settings: collectors (on/off, their own settings from their schema), exclusions and the
privacy pause, the language model (API key to the OS keyring), data folder, autostart, and the agents
that use the memory over MCP (their usage, and the JSON that registers the server in a client)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ..agents.registration import client_config_json
from ..app_settings import (
    AppSettings,
    AppSettingsError,
    autostart_enabled,
    load_app_settings,
    save_app_settings,
    set_autostart,
)
from ..collectors import CollectorSettings, SettingsError, check_settings, load_settings, save_settings
from ..collectors.settings import EXCLUSION_KINDS
from ..core import InvalidInput
from ..core.llm.openai import TIERS, save_api_key, stored_api_key
from ..core.paths import choose_data_dir, chosen_data_dir
from .collector_health import HealthView
from .models import Column, RecordTableModel, record_table, when
from .qt import (
    QApplication,
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    Qt,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)
from .schema_form import FieldError, SettingField, is_required, setting_field
from .widgets import wrapped_label

AGENT_COLUMNS = [
    Column("Agent", lambda a: a["client"], lambda a: f"first seen {when(a['first_used_at'])}"),
    Column("Queries", lambda a: a["queries"], align_right=True),
    Column("Remembered", lambda a: a["remembers"], lambda a: "facts saved with remember()", align_right=True),
    Column("Rejected", lambda a: a["rejections"],
           lambda a: f"last: {a['last_rejection']} ({when(a['last_rejected_at'])})" if a["last_rejection"]
           else "calls the memory refused", align_right=True,
           colour=lambda a: "#b3261e" if a["rejections"] else None),
    Column("Turns logged", lambda a: a["turns"], align_right=True),
    Column("Tool runs", lambda a: a["tool_runs"], align_right=True),
    Column("Changes", lambda a: a.get("changes", 0), lambda a: "forgets, deleted facts and reviews it made for you",
           align_right=True),
    Column("Reads", lambda a: a["reads"], lambda a: "listings, working context, snapshot, summaries, dry runs",
           align_right=True),
    Column("Last used", lambda a: when(a["last_used_at"])),
]
EXCLUSION_LABELS = {"domains": "Web sites (domains)", "apps": "Applications", "repositories": "Git repositories",
                    "paths": "Files and folders"}


RELEASE_HINT = "press Release to run it again"


class CollectorBox(QGroupBox):
    """One collector: a checkable box (enabled), its health when the memory is at hand, and a field per setting
    its schema declares (schema_form)."""

    def __init__(self, collector: Any, entry: dict[str, Any], parent: QWidget | None = None, *,
                 with_health: bool = False):
        super().__init__(collector.name, parent)
        self.collector = collector
        self.setCheckable(True)
        self.setChecked(bool(entry.get("enabled")))
        values = entry.get("settings", {})
        form = QFormLayout(self)
        note = wrapped_label(collector.privacy_note)
        form.addRow(note)
        self.labels: list[QLabel] = []     # the form's label column, aligned across the boxes by the page
        self.health: HealthView | None = None
        if with_health:
            self.health = HealthView(collector.name, releasable=True, release_hint=RELEASE_HINT)
            self.labels.append(QLabel("Health:"))
            form.addRow(self.labels[-1], self.health)
        self.fields: dict[str, SettingField] = {}
        for key, spec in dict(collector.settings_schema).items():
            field = setting_field(key, spec, values.get(key))
            self.fields[key] = field
            self.labels.append(field.label)
            form.addRow(field.label, field.row)

    def values(self, *, required: bool = False) -> dict[str, Any]:
        """The settings the fields hold (an empty one is left out: the plugin's default applies); ``required``:
        a required one left empty is a FieldError."""
        out: dict[str, Any] = {}
        for key, field in self.fields.items():
            where = f"{self.collector.name}.{key}"
            value = field.value(where)
            if value is not None:
                out[key] = value
            elif required and is_required(field.spec) and field.spec.get("default") is None:
                raise FieldError(where, "is required")
        return out


class SettingsDialog(QDialog):
    def __init__(self, data_folder: Path, collectors: list[Any], parent=None, memory=None,
                 release: Callable[[str], bool] | None = None, http: Any = None):
        """``memory`` (the running app's) shows each collector's health and the agents' usage; ``release`` lifts
        a quarantine (the app's also tells its running supervisor; default ``memory.release_collector``);
        ``http`` is the app's in-process MCP HTTP server (``agents.http.AppHttp``), started and stopped on save."""
        super().__init__(parent)
        self.memory = memory
        self.http = http
        self.release = release or (memory.release_collector if memory is not None else None)
        self.setWindowTitle("Magi Desktop — settings")
        self.resize(720, 640)
        self.data_folder = Path(data_folder)
        self.collector_settings = load_settings(self.data_folder)
        self.app_settings = load_app_settings(self.data_folder)
        tabs = QTabWidget()
        tabs.addTab(self._collectors_page(collectors), "Collectors")
        tabs.addTab(self._privacy_page(), "Privacy")
        tabs.addTab(self._llm_page(), "Language model")
        tabs.addTab(self._general_page(), "General")
        tabs.addTab(self._agents_page(), "Agents")
        self.error = QLabel("")
        self.error.setStyleSheet("color: #b3261e")
        self.error.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.save_and_close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(tabs, 1)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.tabs = tabs

    # ----------------------------------------------------------------- pages

    def _collectors_page(self, collectors: list[Any]) -> QWidget:
        inner = QWidget()
        layout = QVBoxLayout(inner)
        intro = wrapped_label("Collectors are off until you turn them on. Each says what it reads; nothing leaves "
                              "this machine.")
        layout.addWidget(intro)
        with_health = self.memory is not None
        self.boxes = {c.name: CollectorBox(c, self.collector_settings.entries.get(c.name, {}), with_health=with_health)
                      for c in collectors}
        for box in self.boxes.values():
            layout.addWidget(box)
            if box.health is not None:
                box.health.release_requested.connect(self.release_collector)
        labels = [label for box in self.boxes.values() for label in box.labels]
        width = max((label.sizeHint().width() for label in labels), default=0)
        for label in labels:          # one label column down the page, not one per collector
            label.setMinimumWidth(width)
        self.refresh_health()
        if not collectors:
            layout.addWidget(QLabel("No collector plugin is installed."))
        layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(inner)
        return scroll

    def _privacy_page(self) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        self.paused = QCheckBox("Pause all collection (privacy pause)")
        self.paused.setChecked(self.collector_settings.paused)
        form.addRow(self.paused)
        hint = wrapped_label("Never record anything that mentions these (one per line). Excluded web sites and "
                             "folders are also dropped wherever they appear: a window title, a command.")
        form.addRow(hint)
        self.exclusions: dict[str, QPlainTextEdit] = {}
        for kind in EXCLUSION_KINDS:
            edit = QPlainTextEdit("\n".join(self.collector_settings.exclusions.get(kind, [])))
            edit.setFixedHeight(70)
            self.exclusions[kind] = edit
            form.addRow(EXCLUSION_LABELS[kind] + ":", edit)
        return page

    def _llm_page(self) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        intro = wrapped_label("Without an endpoint Magi uses its offline rules. Any OpenAI-compatible server works "
                              "(Ollama, llama.cpp, vLLM, LM Studio, a hosted API). Takes effect at the next start.")
        form.addRow(intro)
        self.base_url = QLineEdit(self.app_settings.llm_base_url)
        self.base_url.setPlaceholderText("http://localhost:11434/v1")
        self.model = QLineEdit(self.app_settings.llm_model)
        self.tier_models = {tier: QLineEdit(self.app_settings.tier_models.get(tier, "")) for tier in TIERS}
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        has_key = bool(self.app_settings.llm_base_url and stored_api_key(self.app_settings.llm_base_url))
        self.api_key.setPlaceholderText("stored in the OS keyring — leave empty to keep" if has_key
                                        else "optional; stored in the OS keyring, never in a file")
        form.addRow("Endpoint URL:", self.base_url)
        form.addRow("Model:", self.model)
        for tier, edit in self.tier_models.items():
            edit.setPlaceholderText("same as Model")
            form.addRow(f"  {tier} tier:", edit)
        form.addRow("API key:", self.api_key)
        return page

    def _general_page(self) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        chosen = chosen_data_dir()
        self.data_dir = QLabel(str(chosen or self.data_folder))
        self.data_dir.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.data_dir.setWordWrap(True)
        self.new_data_dir: Path | None | Literal[False] = False      # False: unchanged; None: back to the default
        change = QPushButton("Change…")
        change.clicked.connect(self._pick_data_dir)
        row = QHBoxLayout()
        row.addWidget(self.data_dir, 1)
        row.addWidget(change)
        form.addRow("Data folder:", row)
        note = wrapped_label("A new data folder is used from the next start; the current memory stays where it is.")
        form.addRow(note)
        self.autostart = QCheckBox("Start Magi Desktop when I log in")
        self.autostart.setChecked(autostart_enabled())
        form.addRow(self.autostart)
        return page

    def _agents_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        intro = wrapped_label("Agents that use this memory through its MCP server, by the name their client gives: "
                              "what they asked, saved and logged, and how often the memory refused them (a quote that "
                              "was not your words, a message without its origin).")
        layout.addWidget(intro)
        self.agents_model = RecordTableModel(AGENT_COLUMNS)
        self.agents_table = record_table(self.agents_model, sort_by="Last used", descending=True)
        self.agents_table.setMinimumHeight(150)        # a few agents in view: the page scrolls, not the table away
        layout.addWidget(self.agents_table, 1)
        self.agents_empty = QLabel("")
        layout.addWidget(self.agents_empty)
        refresh = QPushButton("Refresh")
        refresh.clicked.connect(self.refresh_agents)
        layout.addWidget(refresh, 0, Qt.AlignmentFlag.AlignRight)
        connect = QGroupBox("Connect an agent")
        form = QVBoxLayout(connect)
        how = wrapped_label("Add this to your MCP client's configuration — Claude Desktop: "
                            "claude_desktop_config.json; Cursor: ~/.cursor/mcp.json; VS Code: .vscode/mcp.json under "
                            '"servers" — then restart the client. The server runs beside this app on the same memory.')
        form.addWidget(how)
        self.mcp_snippet = QPlainTextEdit(client_config_json(self.data_folder))
        self.mcp_snippet.setReadOnly(True)
        self.mcp_snippet.setMinimumHeight(190)
        form.addWidget(self.mcp_snippet)
        copy = QPushButton("Copy")
        copy.clicked.connect(self.copy_mcp_snippet)
        form.addWidget(copy, 0, Qt.AlignmentFlag.AlignRight)
        layout.addWidget(connect)
        layout.addWidget(self._http_box())
        self.refresh_agents()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(page)
        return scroll

    def _http_box(self) -> QGroupBox:
        box = QGroupBox("Serve over HTTP")
        form = QFormLayout(box)
        form.addRow(wrapped_label("For clients that connect by URL rather than start a server (streamable HTTP, "
                                  "this machine only). Each request needs the token below."))
        self.http_enabled = QCheckBox("Serve this memory at http://127.0.0.1:<port>/mcp while the app runs")
        self.http_enabled.setChecked(self.app_settings.http_enabled)
        form.addRow(self.http_enabled)
        self.http_port = QSpinBox()
        self.http_port.setRange(1024, 65535)
        self.http_port.setValue(self.app_settings.http_port)
        form.addRow("Port:", self.http_port)
        self.http_state = QLabel("")
        self.http_state.setWordWrap(True)
        form.addRow("Now:", self.http_state)
        self.http_token = QLineEdit("")
        self.http_token.setReadOnly(True)
        self.http_token.setEchoMode(QLineEdit.EchoMode.Password)
        self.http_token.setPlaceholderText("made when first shown or used")
        row = QHBoxLayout()
        row.addWidget(self.http_token, 1)
        for label, slot in (("Show", self.show_http_token), ("Copy", self.copy_http_token),
                            ("Rotate", self.rotate_http_token)):
            button = QPushButton(label)
            button.clicked.connect(slot)
            row.addWidget(button)
        form.addRow("Token:", row)
        self.http_token_where = QLabel("")
        self.http_token_where.setWordWrap(True)
        form.addRow("", self.http_token_where)
        self.refresh_http()
        return box

    def refresh_http(self) -> None:
        if self.http is None:
            self.http_state.setText("shown when the settings are opened from the running app; `magi mcp "
                                    "--transport streamable-http` serves over HTTP from a terminal")
        elif self.http.url:
            self.http_state.setText(f"serving {self.http.url}")
        else:
            self.http_state.setText(f"off — {self.http.error}" if self.http.error else "off")

    def _shown_token(self, rotate: bool = False) -> None:
        from ..agents.http import http_token

        if self.http is not None:
            token = self.http.rotate() if rotate else self.http.token()
        else:
            token = http_token(self.data_folder, rotate=rotate)
        self.http_token.setText(token.value)
        self.http_token_where.setText(("A new token: clients with the old one are refused. " if rotate else "")
                                      + f"Kept in {token.kept_in}.")
        self.refresh_http()

    def show_http_token(self) -> None:
        self._shown_token()
        self.http_token.setEchoMode(QLineEdit.EchoMode.Normal)

    def copy_http_token(self) -> None:
        if not self.http_token.text():
            self._shown_token()
        QApplication.clipboard().setText(self.http_token.text())

    def rotate_http_token(self) -> None:
        self._shown_token(rotate=True)

    def refresh_health(self) -> None:
        """Each collector's health as the memory keeps it (what its last run found, in any process)."""
        if self.memory is None:
            return
        statuses = self.memory.collector_statuses()
        for name, box in self.boxes.items():
            if box.health is not None:
                box.health.show_status(statuses.get(name))

    def release_collector(self, name: str) -> bool:
        """The Release button: the quarantined collector runs again, in every process; True if it was
        quarantined."""
        released = self.release(name) if self.release is not None else False
        self.refresh_health()
        return released

    def refresh_agents(self) -> None:
        usage = self.memory.agent_usage() if self.memory is not None else []
        self.agents_model.set_records(usage)
        self.agents_table.resizeColumnsToContents()
        self.agents_empty.setText("" if usage else "No agent has used the memory yet." if self.memory is not None
                                  else "Usage is shown when the settings are opened from the running app.")

    def copy_mcp_snippet(self) -> None:
        QApplication.clipboard().setText(self.mcp_snippet.toPlainText())

    def _pick_data_dir(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Data folder", str(self.data_folder))
        if folder:
            self.choose_data_folder(Path(folder))

    def choose_data_folder(self, folder: Path | None) -> None:
        self.new_data_dir = folder
        self.data_dir.setText(f"{folder} (from the next start)" if folder else "the default (from the next start)")

    # ------------------------------------------------------------------ save

    def collected(self) -> tuple[CollectorSettings, AppSettings]:
        """What the form says, checked; raises FieldError / SettingsError / AppSettingsError naming the field."""
        entries = dict(self.collector_settings.entries)
        for name, box in self.boxes.items():
            values = box.values(required=box.isChecked())
            if box.isChecked():
                check_settings(self.data_folder, box.collector, values)
            entries[name] = {"enabled": box.isChecked(), "settings": values}
        exclusions = {kind: [line.strip() for line in edit.toPlainText().splitlines() if line.strip()]
                      for kind, edit in self.exclusions.items()}
        collectors = CollectorSettings(paused=self.paused.isChecked(), exclusions=exclusions,
                                       enabled={n: e["settings"] for n, e in entries.items() if e["enabled"]},
                                       entries=entries)
        app = AppSettings(self.base_url.text().strip(), self.model.text().strip(),
                          {t: e.text().strip() for t, e in self.tier_models.items() if e.text().strip()},
                          self.autostart.isChecked(), self.http_enabled.isChecked(), self.http_port.value())
        try:
            app.llm_settings()
        except InvalidInput as exc:
            raise FieldError("language model", str(exc)) from None
        return collectors, app

    def save(self) -> bool:
        try:
            collectors, app = self.collected()
        except (FieldError, SettingsError, AppSettingsError) as exc:
            self.error.setText(f"Not saved — {exc}")
            return False
        key = self.api_key.text().strip()
        if key:
            if not app.llm_base_url:
                self.error.setText("Not saved — language model: an API key needs an endpoint URL")
                return False
            try:
                save_api_key(app.llm_base_url, key)
            except Exception as exc:  # noqa: BLE001 - no keyring backend: say so, do not write the key anywhere
                self.error.setText(f"Not saved — the OS keyring is unavailable ({exc}); set MAGI_LLM_API_KEY "
                                   "in the environment instead")
                return False
        save_settings(self.data_folder, collectors)
        save_app_settings(self.data_folder, app)
        if app.autostart != autostart_enabled():
            set_autostart(app.autostart)
        if self.new_data_dir is not False:
            choose_data_dir(self.new_data_dir)
        self.collector_settings, self.app_settings = collectors, app
        self.api_key.clear()
        self.error.setText("")
        if self.http is not None:
            failed = self.http.apply(app.http_enabled, app.http_port)
            self.refresh_http()
            if failed:
                self.error.setText(f"Saved, but the HTTP server {failed}")
        return True

    def save_and_close(self) -> None:
        if self.save():
            self.accept()
