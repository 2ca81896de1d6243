"""The settings dialog and the app settings behind it (pytest-qt, offscreen)."""

import json

import pytest

from magi_desktop.app_settings import AppSettingsError, autostart_entry, llm_for, load_app_settings
from magi_desktop.collectors import load_plugins, load_settings
from magi_desktop.core.llm.openai import KEYRING_SERVICE, OpenAICompatibleLLM, keyring_user
from magi_desktop.core.paths import chosen_data_dir, default_data_dir

pytest.importorskip("pytestqt")

from magi_desktop.ui.qt import Qt
from magi_desktop.ui.settings_dialog import SettingsDialog


@pytest.fixture
def dialog(qtbot, tmp_path):
    plugins = load_plugins({"MAGI_LOAD_PLUGINS": "git,calendar,browser"})
    dialog = SettingsDialog(tmp_path / "data", plugins.collectors())
    qtbot.addWidget(dialog)
    return dialog


def test_collectors_and_exclusions_are_saved_to_collectors_json(dialog, tmp_path):
    git = dialog.boxes["git"]
    assert not git.isChecked()                                     # off until the user turns it on
    git.setChecked(True)
    git.fields["repositories"].widget.setPlainText(f"{tmp_path}/proj\n\n  ~/src/app  \n")
    git.fields["backfill_days"].widget.setValue(30)
    dialog.exclusions["domains"].setPlainText("bank.example\nhealth.example")
    dialog.paused.setChecked(True)
    assert dialog.save()
    settings = load_settings(tmp_path / "data")
    assert settings.enabled["git"]["repositories"] == [f"{tmp_path}/proj", "~/src/app"]
    assert settings.enabled["git"]["backfill_days"] == 30
    assert settings.exclusions["domains"] == ["bank.example", "health.example"] and settings.paused
    assert "browser" not in settings.enabled
    mode = (tmp_path / "data" / "collectors.json").stat().st_mode & 0o777
    assert mode == 0o600


def test_a_bad_value_is_named_and_nothing_is_written(dialog, tmp_path):
    browser = dialog.boxes["browser"]
    browser.setChecked(True)
    browser.fields["backfill_days"].widget.setText("ninety")
    assert not dialog.save()
    assert "browser.backfill_days" in dialog.error.text()
    assert not (tmp_path / "data" / "collectors.json").exists()


def test_disabled_collectors_keep_their_settings(dialog, tmp_path, qtbot):
    dialog.boxes["calendar"].setChecked(True)
    dialog.boxes["calendar"].fields["paths"].widget.setPlainText("~/cal")
    assert dialog.save()
    dialog.boxes["calendar"].setChecked(False)
    assert dialog.save()
    again = SettingsDialog(tmp_path / "data", load_plugins({"MAGI_LOAD_PLUGINS": "calendar"}).collectors())
    qtbot.addWidget(again)
    assert not again.boxes["calendar"].isChecked()
    assert again.boxes["calendar"].fields["paths"].widget.toPlainText() == "~/cal"


def test_the_llm_key_goes_to_the_keyring_never_to_a_file(dialog, tmp_path, memory_keyring):
    dialog.base_url.setText("http://localhost:11434/v1")
    dialog.model.setText("qwen2.5:7b")
    dialog.tier_models["reasoning"].setText("qwen2.5:14b")
    dialog.api_key.setText("sk-secret-123")
    assert dialog.save()
    assert memory_keyring.store[(KEYRING_SERVICE, keyring_user("http://localhost:11434/v1"))] == "sk-secret-123"
    for name in ("settings.json", "collectors.json"):
        assert "sk-secret-123" not in (tmp_path / "data" / name).read_text()
    settings = load_app_settings(tmp_path / "data")
    assert settings.llm_model == "qwen2.5:7b" and settings.tier_models == {"reasoning": "qwen2.5:14b"}
    llm = llm_for(tmp_path / "data", env={})
    assert isinstance(llm, OpenAICompatibleLLM) and llm._api_key == "sk-secret-123"


def test_a_half_configured_endpoint_is_refused(dialog, tmp_path):
    dialog.base_url.setText("localhost:11434")
    assert not dialog.save() and "language model" in dialog.error.text()
    dialog.base_url.setText("")
    dialog.api_key.setText("sk-x")
    assert not dialog.save() and "endpoint" in dialog.error.text()
    assert llm_for(tmp_path / "data", env={}) == "rules"


def test_a_malformed_settings_file_names_its_field(tmp_path):
    (tmp_path / "settings.json").write_text(json.dumps({"llm": {"base_url": "http://x/v1", "model": "m",
                                                                "tier_models": {"huge": "m2"}}}))
    with pytest.raises(AppSettingsError) as caught:
        load_app_settings(tmp_path)
    assert caught.value.where == "llm.tier_models.huge"


@pytest.mark.parametrize(("http", "where"), [
    ({"enabled": "yes"}, "mcp_http.enabled"), ({"port": 70000}, "mcp_http.port"), ({"port": True}, "mcp_http.port"),
    ({"host": "0.0.0.0"}, "mcp_http")])
def test_a_malformed_http_setting_names_its_field(tmp_path, http, where):
    (tmp_path / "settings.json").write_text(json.dumps({"mcp_http": http}))
    with pytest.raises(AppSettingsError) as caught:
        load_app_settings(tmp_path)
    assert caught.value.where == where


def test_autostart_and_data_folder(dialog, tmp_path, monkeypatch):
    dialog.autostart.setChecked(True)
    dialog.choose_data_folder(tmp_path / "elsewhere")
    assert dialog.save()
    entry = autostart_entry()
    assert entry.exists() and "magi_desktop.cli app" in entry.read_text()
    assert chosen_data_dir() == tmp_path / "elsewhere"
    monkeypatch.delenv("MAGI_DATA_DIR")
    assert default_data_dir() == tmp_path / "elsewhere"
    dialog.autostart.setChecked(False)
    dialog.choose_data_folder(None)
    assert dialog.save()
    assert not entry.exists() and chosen_data_dir() is None


def test_the_agents_page_shows_each_agents_usage_and_the_registration_snippet(qtbot, tmp_path, qtmodeltester):
    from magi_desktop.core import Memory
    from magi_desktop.ui.qt import QApplication

    with Memory.open(tmp_path / "data", embedder="hashing") as memory:
        for tool, rejected in (("memory_query", None), ("memory_query", None), ("remember", None),
                               ("remember", "quote_not_found"), ("log_turn", None)):
            memory.record_agent_call("claude-ai", tool, rejected=rejected, now=1_772_000_000.0)
        memory.record_agent_call("cursor", "log_tool_run", now=1_772_000_100.0)
        dialog = SettingsDialog(tmp_path / "data", [], memory=memory)
        qtbot.addWidget(dialog)
        assert dialog.tabs.tabText(dialog.tabs.count() - 1) == "Agents"
        model = dialog.agents_model
        qtmodeltester.check(model)
        headers = [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]
        rows = {model.index(r, 0).data(): {h: model.index(r, c).data() for c, h in enumerate(headers)}
                for r in range(model.rowCount())}
        assert set(rows) == {"claude-ai", "cursor"}
        claude = rows["claude-ai"]
        assert (claude["Queries"], claude["Remembered"], claude["Rejected"], claude["Turns logged"]) == ("2", "1",
                                                                                                       "1", "1")
        assert rows["cursor"]["Tool runs"] == "1"
        rejected = model.index(next(r for r in range(model.rowCount()) if model.index(r, 0).data() == "claude-ai"),
                               headers.index("Rejected"))
        assert "remember: quote_not_found" in rejected.data(Qt.ItemDataRole.ToolTipRole)

        memory.record_agent_call("vscode", "memory_query")
        dialog.refresh_agents()
        assert model.rowCount() == 3

        snippet = json.loads(dialog.mcp_snippet.toPlainText())
        server = snippet["mcpServers"]["magi-desktop"]
        assert server["args"][-3:] == ["mcp", "--data-dir", str(tmp_path / "data")]
        dialog.copy_mcp_snippet()
        assert json.loads(QApplication.clipboard().text()) == snippet


def test_serve_over_http_starts_the_apps_server_and_rotating_the_token_locks_out_the_old_one(qtbot, tmp_path,
                                                                                             monkeypatch):
    """Settings → Agents → Serve over HTTP (issue 21): saved, the app's in-process server answers with the token
    shown in the dialog; Rotate restarts it, so the old token is refused; unticked, it stops."""
    import socket

    import httpx2
    import keyring
    from keyring.backends import fail

    from magi_desktop.agents.http import AppHttp
    from magi_desktop.core import Memory

    previous = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())            # a headless machine: the token is in a 0600 file
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}}

    def status(token: str) -> int:
        return httpx2.post(f"http://127.0.0.1:{port}/mcp", json=initialize, timeout=30, headers={
            "Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}).status_code

    try:
        with Memory.open(tmp_path / "data", embedder="hashing") as memory:
            http = AppHttp(memory)
            dialog = SettingsDialog(tmp_path / "data", [], memory=memory, http=http)
            qtbot.addWidget(dialog)
            assert dialog.http_state.text() == "off" and not dialog.http_enabled.isChecked()
            dialog.http_enabled.setChecked(True)
            dialog.http_port.setValue(port)
            assert dialog.save(), dialog.error.text()
            assert load_app_settings(tmp_path / "data").http_enabled
            assert dialog.http_state.text() == f"serving http://127.0.0.1:{port}/mcp"
            dialog.show_http_token()
            token = dialog.http_token.text()
            assert token and str(tmp_path / "data" / "mcp-http-token") in dialog.http_token_where.text()
            assert status(token) == 200 and status("wrong") == 401
            dialog.rotate_http_token()
            rotated = dialog.http_token.text()
            assert rotated != token and status(token) == 401 and status(rotated) == 200
            dialog.http_enabled.setChecked(False)
            assert dialog.save()
            assert dialog.http_state.text() == "off" and http.url is None
            with pytest.raises(httpx2.ConnectError):
                status(rotated)
    finally:
        keyring.set_keyring(previous)


def test_a_port_that_is_taken_is_said_and_the_settings_are_still_saved(qtbot, tmp_path):
    import socket

    from magi_desktop.agents.http import AppHttp
    from magi_desktop.core import Memory

    with socket.socket() as taken, Memory.open(tmp_path / "data", embedder="hashing") as memory:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        http = AppHttp(memory)
        dialog = SettingsDialog(tmp_path / "data", [], memory=memory, http=http)
        qtbot.addWidget(dialog)
        dialog.http_enabled.setChecked(True)
        dialog.http_port.setValue(taken.getsockname()[1])
        assert dialog.save()
        assert "could not serve on port" in dialog.error.text() and dialog.http_state.text().startswith("off — ")
        assert http.url is None


def test_without_the_running_app_the_agents_page_says_where_usage_shows(dialog):
    assert dialog.agents_model.rowCount() == 0
    assert "running app" in dialog.agents_empty.text()


class Bookmarks:
    """A third-party collector whose schema uses every part docs/plugins.md allows."""

    name, source_type, interval_seconds, privacy_note = "bookmarks", "bookmarks", 3600, "Reads bookmarks."
    settings_schema = {
        "file": {"type": "string", "title": "Bookmarks file", "description": "Path of the exported bookmarks.html",
                 "required": True},
        "min_visits": {"type": "integer", "default": 3, "description": "Only bookmarks visited this often"},
        "max_age_days": {"type": "number", "default": 90},
        "folders": {"type": "array", "items": {"type": "string"}, "default": ["Work", "Reading"]},
        "weights": {"type": "array", "items": {"type": "number"}},
        "with_tags": {"type": "boolean", "default": True},
        "labels": {"type": "object", "description": "Folder → label"},
        "broken": "not a spec",
    }


def test_settings_show_each_schema_property_by_its_title_help_default_and_whether_it_is_required(qtbot, tmp_path):
    dialog = SettingsDialog(tmp_path / "data", [Bookmarks()])
    qtbot.addWidget(dialog)
    fields = dialog.boxes["bookmarks"].fields
    labels = {key: field.label.text() for key, field in fields.items()}
    assert labels == {"file": "Bookmarks file (required):", "min_visits": "Min visits:",
                      "max_age_days": "Max age days:", "folders": "Folders:", "weights": "Weights:",
                      "with_tags": "With tags:", "labels": "Labels:", "broken": "Broken:"}
    assert fields["file"].help.text() == "Path of the exported bookmarks.html"
    assert fields["file"].widget.toolTip() == "Path of the exported bookmarks.html"
    assert fields["max_age_days"].help is None
    assert fields["file"].widget.placeholderText() == "required"
    assert fields["min_visits"].widget.value() == 3                       # the default, as the initial value
    assert fields["max_age_days"].widget.placeholderText() == "default: 90"
    assert fields["folders"].widget.placeholderText() == "one per line; default: Work, Reading"
    assert fields["with_tags"].widget.isChecked()
    box = dialog.boxes["bookmarks"]
    box.setChecked(True)
    assert not dialog.save() and "bookmarks.file: is required" in dialog.error.text()   # enabled, so it must be set
    assert not (tmp_path / "data" / "collectors.json").exists()
    fields["file"].widget.setText("~/bookmarks.html")
    fields["weights"].widget.setPlainText("1\nheavy")
    assert not dialog.save() and "bookmarks.weights (line 2): must be a number" in dialog.error.text()
    fields["weights"].widget.setPlainText("1\n2.5")
    fields["labels"].widget.setText('["not", "an object"]')
    assert not dialog.save() and "bookmarks.labels: must be a JSON object" in dialog.error.text()
    fields["labels"].widget.setText('{"Work": "job"}')
    assert dialog.save(), dialog.error.text()
    saved = load_settings(tmp_path / "data").enabled["bookmarks"]
    # What the user left as shown (the defaults 3 and True) stays unset: the plugin's default applies, and a later
    # version's default too.
    assert saved == {"file": "~/bookmarks.html", "weights": [1.0, 2.5], "labels": {"Work": "job"}}
    again = SettingsDialog(tmp_path / "data", [Bookmarks()])
    qtbot.addWidget(again)
    assert again.boxes["bookmarks"].fields["labels"].widget.text() == '{"Work": "job"}'
    assert again.boxes["bookmarks"].fields["weights"].widget.toPlainText() == "1.0\n2.5"
    again.boxes["bookmarks"].fields["min_visits"].widget.setValue(5)          # changed: now the user's own
    assert again.save(), again.error.text()
    assert load_settings(tmp_path / "data").enabled["bookmarks"]["min_visits"] == 5


def test_a_builtin_collectors_settings_read_by_their_titles_and_the_label_column_lines_up(qtbot, tmp_path):
    music = SettingsDialog(tmp_path / "data", load_plugins({"MAGI_LOAD_PLUGINS": "music,git"}).collectors())
    qtbot.addWidget(music)
    assert music.boxes["music"].fields["min_play_seconds"].label.text() == "Shortest play (seconds):"
    widths = {label.minimumWidth() for box in music.boxes.values() for label in box.labels}
    assert len(widths) == 1 and widths.pop() > 0
