"""The redaction class (issue 16) as properties: a generated secret beside any key-like word, in any
assignment form, is gone after ingest; a benign value beside the same words is kept."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from payloads import chat, sensor

from magi_desktop.core import Memory
from magi_desktop.core.redact_entropy import high_entropy

from .fuzzing import count
from .secret_families import KEYWORDED_FORMS

pytestmark = pytest.mark.fuzz

_KEY_WORDS = ("api", "auth", "token", "secret", "password", "passwd", "credential", "access", "private", "signing",
              "session", "client_secret", "hmac", "apikey", "bearer", "cookie")
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
secrets = st.text(_ALNUM, min_size=20, max_size=64).filter(high_entropy)
benign_values = st.one_of(
    st.from_regex(r"[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,3}", fullmatch=True),          # a version
    st.sampled_from(["true", "false", "null", "$API_TOKEN", "${SECRET}", "<your key here>", "xxxxxxxx"]),
    st.from_regex(r"/etc/[a-z]{3,8}/[a-z]{3,8}\.(?:pem|conf|json)", fullmatch=True),  # a path
    st.from_regex(r"https://[a-z]{3,10}\.example\.com/[a-z]{2,8}", fullmatch=True),  # a URL
)


@pytest.fixture(scope="module")
def secret_memory(tmp_path_factory):
    memory = Memory.open(tmp_path_factory.mktemp("fuzz-secrets") / "data", embedder="hashing")
    yield memory
    memory.close()


def _stored(memory, event_ids) -> str:
    rows = memory.db.reader().execute(
        f"SELECT content, metadata_json FROM fact_events WHERE event_id IN ({', '.join('?' * len(event_ids))})",
        event_ids).fetchall()
    return "\n".join(c + m for c, m in rows)


@given(st.sampled_from(_KEY_WORDS), st.sampled_from(KEYWORDED_FORMS), secrets, st.integers(0, 10**9))
def test_a_secret_beside_a_key_like_word_is_gone_after_ingest(secret_memory, word, form, secret, n):
    count("secret_forms")
    text = form.format(i=word, I=word.upper(), s=secret)
    results = secret_memory.ingest_many([
        chat(text, session=f"f{n}", at=1.7e9 + n % 10**6),
        sensor("run_command", {"command": text}, source="terminal", at=1.7e9 + n % 10**6, item=f"t{n}"),
        sensor("git_commit", {"repo": "/src", "message": text}, source="git", at=1.7e9 + n % 10**6, item=f"g{n}"),
    ])
    assert secret not in _stored(secret_memory, [r.event_id for r in results])


_BENIGN_FORMS = ("{i}_version = {s}", "{i}_url: {s}", "{i}_file={s}", '"{i}_path": "{s}"', "--{i}-endpoint {s}",
                 "<{i}Url>{s}</{i}Url>")


@given(st.sampled_from(_KEY_WORDS), st.sampled_from(_BENIGN_FORMS), benign_values)
def test_a_benign_value_beside_the_same_words_is_kept(secret_memory, word, form, value):
    """A name that says what it holds (a version, a URL, a path) keeps an ordinary value."""
    count("benign_forms")
    text = form.format(i=word, s=value)
    result = secret_memory.ingest(chat(f"config {text}", session="benign", at=1.7e9))
    assert value in secret_memory.get_event(result.event_id)["content"]
