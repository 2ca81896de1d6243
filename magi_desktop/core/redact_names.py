"""The words of secret redaction (:mod:`.redact`): which names say their value is a secret (``password``,
``…_token``), which are merely key-like (``signing_key``), and which values beside them are harmless
(a placeholder, a state such as "required", prose)."""

from __future__ import annotations

import re

# Names whose value is a secret, in env vars, config files, JSON and CLI flags.
_SECRET_WORDS = (
    r"(?:password|passwd|passphrase|passcode|pwd|secret|tokens?|api[_-]?key|apikey|access[_-]?key|"
    r"secret[_-]?key|private[_-]?key|auth[_-]?key|account[_-]?key|sharedaccesskey|credentials?|creds|"
    r"client[_-]?secret|session[_-]?key|authorization|cookie|storepass|keypass|passout|passin|pass[_-]?word|"
    # short words only as a whole word or after a separator: db_pass, auth, pw — not bypass, author, upward
    r"(?<![A-Za-z0-9])(?:pass|auth|pw))"
)
# Where a name can say its value is a secret, the text holds one of these words (the separators a name's
# words are joined with, "api key" too): without one, a keyed value must be a long token to be a secret.
SECRET_WORD_SCAN = re.compile(_SECRET_WORDS.replace("[_-]?", r"[_\-\s]{0,3}"))
_SECRET_WORD_AT = re.compile(_SECRET_WORDS, re.IGNORECASE)
# The prefix is bounded: an unbounded one made "a.a.a.…" quadratic (minutes for 64k characters).
_SECRET_NAME = r"[A-Za-z0-9_.\-]{0,40}?" + _SECRET_WORDS
_NAME_CHARS = re.compile(r"^[A-Za-z0-9_.\-$@]{1,160}$")
# A value: quoted, or up to the next space ("Tr0ub4dor&3" is one password).
_VALUE = r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"}<>]+)"
NAME_WORDS = ("pass", "pwd", "pw", "secret", "token", "key", "credential", "creds", "auth", "cookie")
SESSION_KEY_WORDS = ("session_key", "session-key", "sessionkey")
# Words that make a name key-like: its value goes if it is a long high-entropy token.
KEY_LIKE = ("key", "secret", "token", "passw", "pwd", "credential", "creds", "auth", "access", "api",
             "signature", "cookie", "session", "private", "bearer", "jwt", "sig")
# Key-like names that hold no secret: an id, a name, a place, a size… (``primary_key``, ``token_url``).
_NOT_SECRET_WORDS = frozenset({
    "id", "ids", "name", "names", "url", "uri", "urls", "endpoint", "host", "domain", "file", "files", "path",
    "dir", "folder", "type", "types", "length", "len", "size", "count", "limit", "version", "alias", "format",
    "mode", "label", "field", "column", "public", "pub", "primary", "foreign", "schema", "sequence", "index",
    "idx", "bucket", "frame", "board", "code", "word", "press", "pressed", "down", "up", "left", "right",
    "stroke", "ring", "region", "algorithm", "alg", "expiry", "expires", "ttl", "timeout", "method", "scheme",
    "header", "prefix", "suffix", "hash", "level", "log", "logs", "policy", "role", "roles", "group", "scope",
    "scopes", "user", "username", "email", "issuer", "audience", "provider", "vault", "store", "template",
    "chars", "charset", "alphabet",
})
# Words after a secret word that make the name about the secret, not holding it: password_min_length,
# PASSWORD_RESET_URL, passwordVariable, secret_name (and every word above). Others keep it a secret:
# PASSWORD2, password_confirmation, db_password_prod.
_ABOUT_THE_SECRET = _NOT_SECRET_WORDS | frozenset({
    "min", "max", "minimum", "maximum", "variable", "var", "reset", "rule", "rules", "regex", "pattern", "hint",
    "prompt", "placeholder", "strength", "expiration", "age", "history", "less", "manager", "required",
    "enabled", "disabled", "label", "input", "form", "box", "button", "dialog", "page", "screen", "view",
    "flag", "option", "options", "changed", "change", "policy", "updated", "set", "valid", "invalid", "env",
    "source", "server", "service", "status", "state", "flow", "handler", "backend", "plugin", "module",
    "as", "result", "results", "mechanism", "helper", "helpers", "storage",
})
# Words before a secret word that make it a token that guards nothing once seen: public_token, csrf-token,
# authenticity_token, nextPageToken, CancellationToken.
_NOT_SECRET_BEFORE = frozenset({"public", "pub", "csrf", "xsrf", "authenticity", "page", "cancellation",
                                "continuation", "cursor", "sync", "idempotency"})
# Words before "key" that make it a lookup key, not a credential (``sort_key``, ``primary_key``).
_NOT_SECRET_QUALIFIERS = frozenset({"public", "pub", "primary", "foreign", "bucket", "sort", "partition", "cache",
                                    "csrf", "xsrf", "authenticity", "page", "cancellation", "continuation",
                                    "idempotency", "dedupe", "range", "row", "lookup", "map", "dict", "object",
                                    "hash", "index", "sequence", "schema", "composite", "unique", "natural"})
# Authorization schemes: "Authorization: Bearer $TOKEN" names the scheme of a credential that is not there.
AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "apikey", "api-key", "api-token", "negotiate",
                           "ntlm", "hoba", "mutual", "aws4-hmac-sha256", "sswss", "ssws"})
# Declaration words after a name ("var apiToken string = …", "token: str = …"): the name is before them.
TYPE_WORDS = frozenset({"string", "str", "int", "var", "val", "let", "const", "final", "static", "char", "bytes",
                         "secret", "text"})
_NOT_KEY_LIKE = ("monkey", "donkey", "turkey", "keyboard", "keyword", "keynote", "keyframe", "author", "accessor",
                 "accessib", "capital", "rapid", "tokenizer", "sigma", "signal", "design", "assign", "csrf", "xsrf",
                 "authenticity")


# Bare words that are also ordinary English: after "secret:" or "key:" a short
# plain word is prose ("My secret: I love jazz"), not a credential. Not after a password word:
# "password: sunshine" is YAML's form of a password — only a word that says the password's state is kept.
_PROSE_NAMES = frozenset({"secret", "key", "auth", "cookie", "token", "session"})
PASSWORD_STATES = frozenset({"required", "optional", "incorrect", "invalid", "wrong", "expired", "changed",
                              "reset", "hidden", "empty", "missing", "unknown", "protected", "set", "unset",
                              "ok", "saved", "updated", "accepted", "rejected", "forgotten", "is", "was", "the",
                              "a", "an", "for", "of", "to", "and", "or", "not"})


def prose_value(name: str, op: str, value: str) -> bool:
    """"secret: I…" reads as a sentence: an ordinary word, a colon, a short plain word."""
    if op not in (":", "：") or not value.isalpha():
        return False
    last = name.split()[-1].strip("\"'").lower() if name.split() else ""
    return (last in _PROSE_NAMES and len(value) < 12) or value.lower() in PASSWORD_STATES


def _words(name: str) -> list[str]:
    """``adobeClientID`` / ``ADOBE_CLIENT_ID`` / ``adobe-client id`` → ["adobe", "client", "id"]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def is_secret_name(name: str) -> bool:
    """The name says its value is a secret: ``password``, ``DB_PASS``, ``adobeToken``, ``client_secret``, and
    with words after it that do not make it about the secret: ``PASSWORD2``, ``password_confirmation``,
    ``db_password_prod`` (not ``password_min_length``, ``token_url``, ``passwordless``, ``author``)."""
    flat = "_".join(name.split()).strip("\"'`$@")
    lowered = flat.lower()
    if not any(word in lowered for word in NAME_WORDS + SESSION_KEY_WORDS) or not _NAME_CHARS.match(flat):
        return False
    # In a name of several words ("adobe client secret", "API Token https") the secret word is the last one's.
    last_word_at = len(flat) - len(name.split()[-1].strip("\"'`$@"))
    for match in reversed(list(_SECRET_WORD_AT.finditer(flat))):
        if match.end() <= last_word_at:
            break
        rest = flat[match.end():]
        if rest and not (rest[0] in "_.-" or rest[0].isdigit()
                         or (rest[0].isupper() and match.group()[-1].islower())):
            continue                        # "passwordless", "tokenizer": the word goes on
        before = _words(flat[:match.start()])
        if before and any(word in before[-1] for word in _NOT_SECRET_BEFORE):
            return False                    # publicToken, csrfmiddlewaretoken, nextPageToken
        if not any(word in _ABOUT_THE_SECRET for word in _words(rest) if not word.isdigit()):
            return True
    return False


def key_like(name: str) -> bool:
    """The name may hold a key (``signing_key``, ``X-Auth``, ``sessionid``) but does not say it holds one."""
    lowered = name.lower()
    if not any(word in lowered for word in KEY_LIKE) or any(word in lowered for word in _NOT_KEY_LIKE):
        return False
    words = _words(name)
    if not words:
        return False
    if words[-1] in _NOT_SECRET_WORDS and not (words[-1] == "id" and any("session" in w or w == "sid"
                                                                        for w in words)):
        return False
    # key_down_event, keyVaultToStoreSecrets: the word after the key-like one says what it is about.
    after = [words[i + 1] for i, w in enumerate(words[:-1]) if any(k in w for k in KEY_LIKE)]
    if after and after[-1] in _NOT_SECRET_WORDS:
        return False
    return not (len(words) > 1 and any(word in _NOT_SECRET_QUALIFIERS for word in words[:-1]))


def names_family(name: str, words: tuple[str, ...]) -> bool:
    """``name`` names a vendor by one of ``words``: inside one of its words (``etsyApiKey``, ``sumologic``) or
    as whole words (``MessageBirdClientID``), not across them (``SetSysctl``, ``ReactNativeCameraKit``,
    ``sumOfExposures``); a word with separators (``linked_in``) as written."""
    parts = _words(name)
    joined = "".join(parts)
    starts, ends, position = set(), set(), 0
    for part in parts:
        starts.add(position)
        position += len(part)
        ends.add(position)
    for word in words:
        if not word.isalnum():
            if word in name.lower():
                return True
            continue
        if any(word in part for part in parts):
            return True
        at = joined.find(word)
        while at >= 0:
            if at in starts and at + len(word) in ends:
                return True
            at = joined.find(word, at + 1)
    return False


