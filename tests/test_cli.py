"""The `magi` command line, run as a real subprocess against a temporary data folder."""

import json
import os
import stat
import subprocess
import sys

import pytest
from payloads import chat, sensor

pytestmark = pytest.mark.slow


def magi(*args, data_dir, stdin=None):
    env = {**os.environ, "MAGI_DATA_DIR": str(data_dir)}
    return subprocess.run([sys.executable, "-m", "magi_desktop.cli", *args], capture_output=True, text=True,
                          env=env, input=stdin, timeout=120)


def write_jsonl(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_ingest_reports_stored_duplicates_and_bad_lines(tmp_path):
    good = [json.dumps(chat("I have a cat", at=1.7e9)), json.dumps(sensor("visit_page", {"url": "https://a.example"},
                                                                           item="v1", at=1.7e9))]
    bad_role = chat("hi")
    bad_role["chat"]["role"] = "robot"
    file = write_jsonl(tmp_path / "in.jsonl", [*good, "{not json", json.dumps(bad_role), "", good[0]])
    result = magi("ingest", str(file), data_dir=tmp_path / "data")
    assert result.returncode == 1
    assert "stored 2, duplicates 1, rejected 2" in result.stdout
    assert "line 3: invalid JSON" in result.stderr
    assert "line 4: chat.role:" in result.stderr
    status = json.loads(magi("status", "--json", data_dir=tmp_path / "data").stdout)
    assert status["events"]["total"] == 2
    assert status["embedding"]["pending"] == 0 and status["embedding"]["chunks"] == 2
    assert status["sources"]["chat"]["rejected"] == 1


def test_ingest_survives_undecodable_and_hostile_lines(tmp_path):
    good = json.dumps(chat("I have a cat", at=1.7e9)).encode()
    calendar = json.dumps(sensor("calendar_event", {"summary": "x", "start": 1e20}, source="calendar")).encode()
    file = tmp_path / "mixed.jsonl"
    huge_int = b'{"n": ' + b"9" * 5000 + b"}"
    surrogate = json.dumps(chat("bad \ud800 text", at=1.7e9 + 1)).encode()
    file.write_bytes(b"\xef\xbb\xbf" + b"\n".join([good, b"\xff\xfe not utf-8", b"[" * 100_000, huge_int, surrogate,
                                                    calendar]) + b"\n")
    result = magi("ingest", str(file), "--no-embed", data_dir=tmp_path / "data")
    assert "stored 2, duplicates 0, rejected 4" in result.stdout, result.stderr
    assert "line 2: not UTF-8" in result.stderr and "line 3: invalid JSON" in result.stderr
    assert "line 4: invalid JSON" in result.stderr and "line 5: chat.text" in result.stderr
    assert "Traceback" not in result.stderr


def test_ingest_from_stdin_without_embedding(tmp_path):
    lines = "\n".join(json.dumps(chat(f"note {i}", at=1.7e9 + i)) for i in range(5))
    result = magi("ingest", "-", "--no-embed", data_dir=tmp_path / "data", stdin=lines)
    assert result.returncode == 0, result.stderr
    status = json.loads(magi("status", "--json", "--data-dir", str(tmp_path / "data"),
                             data_dir=tmp_path / "elsewhere").stdout)
    assert status["events"]["total"] == 5 and status["embedding"]["pending"] == 5


def test_ingest_missing_file(tmp_path):
    result = magi("ingest", str(tmp_path / "nope.jsonl"), data_dir=tmp_path / "data")
    assert result.returncode == 2 and "no such file" in result.stderr


def test_status_human_readable(tmp_path):
    magi("ingest", "-", data_dir=tmp_path / "d", stdin=json.dumps(chat("I live in Jiaxing")))
    out = magi("status", data_dir=tmp_path / "d").stdout
    assert "L1 events     1" in out and "user_self_report" in out
    assert "L2 (rules)   0 queued, 0 running, 1 done, 0 dead" in out
    assert "1 edges, 1 assertions" in out


def test_doctor_passes_and_checks_permissions(tmp_path):
    data = tmp_path / "d"
    magi("ingest", "-", data_dir=data, stdin=json.dumps(chat("hello there")))
    result = magi("doctor", "--json", data_dir=data)
    assert result.returncode == 0, result.stdout
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    for name in ("sqlite", "fts5", "sqlite-vec", "chinese", "embedding model", "data folder", "database"):
        assert checks[name]["status"] == "OK", checks[name]
    assert "1 events, quick_check ok" in checks["database"]["detail"]
    if os.name == "posix":
        os.chmod(data, 0o755)
        shared = magi("doctor", data_dir=data)
        assert shared.returncode == 0 and "WARN" in shared.stdout and "chmod 700" in shared.stdout
        os.chmod(data / "memory.db", 0o644)
        bad = magi("doctor", data_dir=data)
        assert bad.returncode == 1 and "chmod 600" in bad.stdout
        os.chmod(data / "memory.db", 0o600)
        os.chmod(data, stat.S_IRWXU)


def test_doctor_handles_odd_characters_in_the_data_folder(tmp_path):
    data = tmp_path / "we#ird %41 ?dir"
    magi("ingest", "-", data_dir=data, stdin=json.dumps(chat("hello there")))
    result = magi("doctor", "--json", data_dir=data)
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    assert checks["database"]["status"] == "OK", checks["database"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["we#ird %41 ?dir"]


def test_a_corrupt_database_gets_a_clear_message(tmp_path):
    data = tmp_path / "d"
    data.mkdir(mode=0o700)
    (data / "memory.db").write_bytes(b"this is not a database" * 100)
    result = magi("status", data_dir=data)
    assert result.returncode == 2
    assert f"the memory database {data / 'memory.db'} is corrupt" in result.stderr
    assert "no automatic backup" in result.stderr and "Traceback" not in result.stderr
    doctor = magi("doctor", data_dir=data)
    assert doctor.returncode == 1 and "cannot be read" in doctor.stdout


def test_query_prints_a_readable_pack_and_json(tmp_path):
    data = tmp_path / "d"
    lines = "\n".join(json.dumps(p) for p in [
        chat("I adopted a grey cat named Miso", at=1.7e9),
        chat("Nice! Cats are great.", role="assistant", at=1.7e9 + 10),
    ])
    magi("ingest", "-", data_dir=data, stdin=lines)
    out = magi("query", "What is my cat called?", "--now", "2030-01-01T00:00:00Z", data_dir=data)
    assert out.returncode == 0, out.stderr
    assert "OK · mode exact_fact" in out.stdout and "I adopted a grey cat named Miso" in out.stdout
    assert "Cats are great" not in out.stdout
    assert "[L2 · current] the user has pet Miso" in out.stdout   # derived facts, with what they cite
    assert "[L2 · current] the user has pet grey cat" in out.stdout
    pack = json.loads(magi("query", "cats", "--mode", "episode_recall", "--json", data_dir=data).stdout)
    assert pack["query_mode"] == "episode_recall" and pack["findings"]
    past = json.loads(magi("query", "What is my cat called?", "--now", "2020-01-01T00:00:00Z", "--json",
                           data_dir=data).stdout)
    assert past["insufficient_evidence"] is True
    bad = magi("query", "x", "--mode", "vibes", data_dir=data)
    assert bad.returncode == 2 and "unknown mode" in bad.stderr


def test_query_now_offset_decides_what_yesterday_is(tmp_path):
    data = tmp_path / "d"
    early_morning = chat("I noted the plumber's number", at="2026-11-29T07:00:00+08:00")  # 28th 23:00 UTC
    magi("ingest", "-", data_dir=data, stdin=json.dumps(early_morning))
    shanghai = json.loads(magi("query", "What did I note yesterday?", "--now", "2026-11-30T10:00:00+08:00",
                               "--json", data_dir=data).stdout)
    assert [f["text"] for f in shanghai["findings"]] == ["I noted the plumber's number"]
    assert shanghai["trace"]["temporal"]["window"]["label"] == "yesterday"
