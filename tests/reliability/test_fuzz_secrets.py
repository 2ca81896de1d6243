"""The redaction class (issue 16) as properties: a generated secret beside any key-like word, in any
assignment form, is gone after ingest; a benign value beside the same words is kept; a password in any form
a review found (and with the punctuation that once cut it short) is gone whole; the fast path that picks
the rules never skips one that could match."""
# Raw SQL left reads the stored content and metadata text byte for byte, where a secret could hide.

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from payloads import chat, sensor

from magi_desktop.core import Memory
from magi_desktop.core.redact import CURRENT
from magi_desktop.core.redact_entropy import high_entropy
from magi_desktop.core.redact_harmless import harmless, placeholder
from magi_desktop.core.redact_names import PASSWORD_STATES

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


# "api_client_id" names an identifier, not a secret: only a vendor's own word makes an id form keyworded
# (as in secret_families.keyworded).
_FORMS = tuple(f for f in KEYWORDED_FORMS if "client_id" not in f)


@given(st.sampled_from(_KEY_WORDS), st.sampled_from(_FORMS), secrets, st.integers(0, 10**9))
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


# ------------------------------------------------------------------ issue 16, second pass

_PASSWORD_NAMES = ("password", "PASSWORD", "passwd", "pwd", "DB_PASSWORD", "db_password_prod", "PASSWORD2",
                   "password_confirmation", "userPassword", "pw")
# Passwords as people write them: plain words too, and the punctuation that once cut a value short (not the
# values kept by design: a placeholder, "true", "undefined", a word for the password's state).
passwords = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,;@#%&!^*-_+", min_size=8,
                    max_size=24).filter(lambda s: s[0].isalnum() and s[-1].isalnum() and not placeholder(s)
                                        and s.lower() not in PASSWORD_STATES and not harmless("password", s))
# {n}: the name, {s}: the password. Every form a reviewer found stored unchanged.
_PASSWORD_FORMS = ("{n}: {s}", "{n}={s}", "{n} = '{s}'", "{n}:\n  {s}", "{n}：{s}", "{n} → {s}", "{n} -> {s}",
                   "set -gx {n} {s}", "setx {n} {s}", "git config --global user.{n} {s}", '{{"{n}": "{s}"}}',
                   "machine example.com login bob password {s}", "security add-generic-password -a bob -w {s}",
                   "my {n} is '{s}'", "The wifi password for home is {s}", "password for the router: {s}",
                   "{n}       = \"{s}\"", "export {n}={s}")


def _ingest_password_form(memory, name: str, text: str, secret: str, n: int) -> str:
    results = memory.ingest_many([
        chat(text, session=f"p{n}", at=1.7e9 + n % 10**6),
        sensor("run_command", {"command": text}, source="terminal", at=1.7e9 + n % 10**6,
               item=f"pt{n}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"),
        {"source_type": "runtime", "occurred_at": 1.7e9 + n % 10**6,
         "action": {"tool": "shell", "ok": True, "input": {name: secret, "argv": text.split(" ")}}},
    ])
    return _stored(memory, [r.event_id for r in results if r.event_id])


@given(st.sampled_from(_PASSWORD_NAMES), st.sampled_from(_PASSWORD_FORMS), passwords, st.integers(0, 10**9))
def test_a_password_in_any_form_is_gone_after_ingest(secret_memory, name, form, secret, n):
    count("password_forms")
    stored = _ingest_password_form(secret_memory, name, form.format(n=name, s=secret), secret, n)
    # No piece of it either: a value cut at a comma or a space once left its tail.
    pieces = [piece for piece in re.split(r"[,;]", secret) if len(piece) >= 4 and piece in stored]
    if pieces:
        # A piece may be a word of what the memory stores around any value ("run_comm" of run_command).
        other = "Qz9" * 4
        around = _ingest_password_form(secret_memory, name, form.format(n=name, s=other), other, n + 1)
        assert all(piece in around for piece in pieces), (form.format(n=name, s=secret), stored)


_NOISE = st.sampled_from(["", " ", "\n", "session-0 ", "https://docs.python.org/3/ ", "ran ", "我的", "x=1; ",
                          "Authorization: ", "-u ", "curl ", "key ", "data:\n  ", "kind: Secret\n"])


@given(st.lists(st.one_of(_NOISE, st.sampled_from(KEYWORDED_FORMS + _PASSWORD_FORMS).map(
    lambda f: f.replace("{n}", "{i}")), secrets, passwords, st.sampled_from(_KEY_WORDS)), max_size=6))
def test_the_first_look_loses_nothing(parts):
    """The rules the first look picks (for a text, or for a payload's strings joined) redact exactly what
    every rule would: the fast path never skips a rule that could match."""
    count("first_look")
    text = "".join(p.format(i="db", I="DB", s="Zq7h4Xk9Lp2Wm8Rt") if "{" in p else p for p in parts)
    every = CURRENT.rules
    assert CURRENT.redact_text(text) == CURRENT.redact_text(text, rules=every)
    joined_rules = CURRENT.rules_for("\n".join(parts))
    for part in parts:
        assert CURRENT.redact_text(part, rules=joined_rules) == CURRENT.redact_text(part, rules=every), part
