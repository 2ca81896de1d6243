"""The bugs the fuzz tests found, each pinned by the smallest input that showed it."""

import json
from datetime import timezone

import pytest
from payloads import chat, sensor

from magi_desktop.app_settings import AppSettingsError, load_app_settings
from magi_desktop.collectors import SettingsError, check_settings, load_plugins, load_settings
from magi_desktop.core.contracts import PayloadError
from magi_desktop.core.remember import RememberRejected
from magi_desktop.core.retrieval.temporal import parse_temporal
from magi_desktop.core.store.queue import L2_PROJECTION_JOBS

NOW = 1_764_000_000.0


@pytest.mark.parametrize("key, named", [("", "''"), ("\ud800x", "'\\ud800x'"), ("a\x00", "'a\\x00'"),
                                        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789AB", "'[REDACTED]'")])
def test_an_odd_unknown_field_is_named_escaped_and_its_rejection_counted(memory, key, named):
    """Found: an unknown key "" was named as "" (": unknown field"), and one holding a lone surrogate
    made counting the rejection fail (the message could not be stored as UTF-8)."""
    with pytest.raises(PayloadError) as caught:
        memory.ingest({**chat("hello"), key: 1})
    assert caught.value.field == named and caught.value.reason.startswith("unknown field")
    assert memory.stats()["sources"]["chat"]["rejected"] == 1


def test_a_question_without_words_is_answered(memory):
    """Found: ":" embeds to a zero vector (hashing embedder), whose distance to every edge is NULL; the
    edge path then crashed with a TypeError. Such a question now skips the vector paths."""
    memory.ingest_many([chat("I live in Hangzhou and my sister is Anna"), chat("I bought an air fryer")])
    memory.process_pending()
    for text in (":", "*", "(", "-", '"', "—", "\u200b?"):
        pack = memory.query(text)
        assert pack.status in ("ok", "insufficient")
        assert pack.to_dict()["trace"]["paths"]["vector"]["hits"] == 0


@pytest.mark.parametrize("question", ["1234567890天前", "过去999999999天", "99999年前", "最近100000000年",
                                      "last 99999999999 days", "in the last 999999999 years", "10000000 weeks ago"])
def test_a_time_no_calendar_holds_is_no_window(memory, question):
    """Found: counts too large for a date raised OverflowError / ValueError out of Memory.query."""
    assert parse_temporal(question, NOW, timezone.utc).window is None
    assert memory.query(question).status in ("ok", "insufficient")


def test_long_digit_and_space_runs_match_the_way_short_ones_do():
    """Found: a 20,000-digit question took 25 s (``\\d+`` retried at every digit); the bounded pattern
    still reads the counts people write, and nothing from a run of more than nine digits."""
    assert parse_temporal("3天前", NOW, timezone.utc).window.label == "3天前"
    assert parse_temporal("2024年 3月5日", NOW, timezone.utc).window.label == "2024-03-05"
    assert parse_temporal("0" * 20_000 + "天前", NOW, timezone.utc).window is None
    assert parse_temporal(" " * 20_000 + "3月", NOW, timezone.utc).window is not None


TURN = [{"id": "m1", "role": "user", "text": "My sister's name is Anna.", "provenance": "human_input"}]


@pytest.mark.parametrize("kwargs, reason", [
    ({"turn_messages": "My sister's name is Anna."}, "invalid_turn_messages"),
    ({"turn_messages": ["My sister's name is Anna."]}, "invalid_turn_messages"),
    ({"turn_messages": [{**TURN[0], "id": "\ud800"}]}, "invalid_turn_messages"),
    ({"replaces": [1]}, "invalid_replaces"),
    ({"replaces": 1.5}, "invalid_replaces"),
    ({"content": {"fact": "x"}}, "invalid_content"),
    ({"content": "Anna\ud800"}, "invalid_content"),
    ({"quote": None}, "invalid_quote"),
    ({"project": ["magi"]}, "invalid_project"),
    ({"session_id": 7}, "invalid_session_id"),
])
def test_remember_refuses_arguments_of_the_wrong_type_with_a_reason(memory, kwargs, reason):
    """Found: AttributeError, TypeError and sqlite InterfaceError escaped remember() for these."""
    args = {"quote": "sister's name is Anna", "content": "The user's sister is Anna.", "turn_messages": TURN,
            **kwargs}
    with pytest.raises(RememberRejected) as caught:
        memory.remember(args.pop("quote"), args.pop("content"), **args)
    assert caught.value.reason == reason
    assert memory.facts() == []


def _write(folder, name, document):
    (folder / name).write_text(document if isinstance(document, str) else json.dumps(document))


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_number_setting_must_be_finite(tmp_path, value):
    """Found: JSON's NaN / Infinity passed the schema check, to crash the collector on every run."""
    _write(tmp_path, "collectors.json", '{"collectors": {"browser": {"enabled": true, "settings": '
                                        '{"backfill_days": %s}}}}' % value)
    browser = next(c for c in load_plugins({"MAGI_LOAD_PLUGINS": "browser"}).collectors())
    with pytest.raises(SettingsError) as caught:
        check_settings(tmp_path, browser, load_settings(tmp_path).enabled["browser"])
    assert caught.value.where == "collectors.browser.settings.backfill_days"


def test_settings_text_must_be_storable_and_odd_keys_are_named(tmp_path):
    """Found: a tier model "\\ud800" loaded, then saving the settings failed; an unknown key "" was named ""."""
    _write(tmp_path, "settings.json", '{"llm": {"base_url": "http://localhost:1/v1", "model": "m", '
                                      '"tier_models": {"fast": "\\ud800"}}}')
    with pytest.raises(AppSettingsError) as caught:
        load_app_settings(tmp_path)
    assert caught.value.where == "llm.tier_models"
    _write(tmp_path, "settings.json", {"": 1})
    with pytest.raises(AppSettingsError) as caught:
        load_app_settings(tmp_path)
    assert caught.value.where == "''"
    _write(tmp_path, "collectors.json", {"exclusions": {"paths": ["\ud800"]}})
    with pytest.raises(SettingsError) as caught:
        load_settings(tmp_path)
    assert caught.value.where == "exclusions.paths"


def test_a_visit_whose_url_credentials_were_redacted_is_projected(memory):
    """Found by the privacy suite: "https://alice:[REDACTED]@host/" made urlsplit raise in the L2 rules
    (brackets read as an IPv6 address), so the whole L2 batch failed and was retried until dead."""
    memory.ingest(sensor("visit_page", {"url": "https://alice:Wonderl4nd-Kq7@intranet.example.com/dash",
                                        "title": "Dashboard"}, source="chrome"))
    memory.process_pending()
    conn = memory.db.reader()
    assert [job for job in L2_PROJECTION_JOBS.jobs(conn).values() if job.last_error is not None] == []
    assert "intranet.example.com" in [b.value for b in memory.beliefs("facts")]


def test_a_name_without_words_does_not_break_entity_resolution(memory):
    """Found by the processing fuzz test: an entity named "+++" is stored with a zero vector (hashing
    embedder); its distance to any mention is NULL, and the next L2 batch failed on ``1.0 - None``."""
    memory.ingest(sensor("use_app", {"app_name": "+++", "duration_sec": 60}, source="app_usage", at=NOW))
    memory.process_pending()
    memory.ingest(sensor("run_command", {"command": "--- now"}, source="terminal", at=NOW + 9))
    memory.process_pending()
    conn = memory.db.reader()
    assert [job for job in L2_PROJECTION_JOBS.jobs(conn).values() if job.last_error is not None] == []
    assert memory.query("---").status in ("ok", "insufficient")


@pytest.mark.parametrize("question", ["\U000108e0" * 20_000, " ".join(f"w{i}x" for i in range(3000)),
                                      "I " + " ".join(f"anna{i}" for i in range(2000))])
@pytest.mark.parametrize("mode", [None, "current_state", "episode_recall", "summary", "strategy"])
def test_a_question_of_thousands_of_words_or_one_huge_word_is_answered(memory, question, mode):
    """Found by the 10,000-case run: the L2 paths OR a LIKE per question word, and SQLite refused
    thousands of them ("Expression tree is too large") or one 80,000-byte word ("LIKE or GLOB
    pattern too complex"). The first 64 words of up to 200 characters are searched."""
    memory.ingest_many([chat("I live in Hangzhou and my sister is Anna"), chat("I just bought an air fryer")])
    memory.process_pending()
    pack = memory.query(question, mode=mode, limit=1)
    assert pack.status in ("ok", "insufficient") and len(pack.to_dict()["trace"]["terms"]) <= 64
