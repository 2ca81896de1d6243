"""Secret redaction, applied to every payload before anything is stored or indexed.

Each rule is a regex plus the cheap substrings that must occur for it to
match at all: a lower-cased substring test costs a fraction of a microsecond,
while a regex scan of a sentence costs tens, so most texts are never scanned.
A rule's replacement keeps the non-secret part of the match (the flag name,
the URL's user and host, the variable name, the operator and the quotes) so the
memory still says *what* happened — "ran mysql with a password" — without the
secret. Redaction is deterministic, so a replayed payload still dedupes to the
same event.

Three kinds of rule (architecture §14):

* vendor formats recognisable on their own (``ghp_…``, ``hvs.…``; :mod:`.redact_vendors`);
* contexts that say a secret follows (a URL's user-info, ``Authorization:``, ``mysql -p``, ``curl -u``);
* *keyed values*: a name, an operator and a value, in the forms many languages and formats write them
  (``NAME=v``, ``name: v``, ``name := "v"``, ``"name" => 'v'``, ``-Name 'v'``, ``--name v``,
  ``<name>v</name>``, ``name="…" value="v"``, "the token is v"). The value goes when the name says it is a
  secret (``password``, ``…_token``), when the name says whose it is and the value has that vendor's shape
  (``adobe_client_id`` and 32 hex digits), or when the name is key-like (``signing_key``) and the value is
  a long high-entropy token (:mod:`.redact_entropy`).

The counts a caller collects are of real replacements: a match that removed nothing (a value already
``[REDACTED]``, a placeholder) counts nothing. :class:`RuleSet` is one version of the rules; the memory
records the version that redacted what it holds (:data:`RULES_VERSION`), so text stored under older rules
can be redacted again (:mod:`.reredact`).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import redact_vendors as vendors
from .redact_entropy import ENTROPY_PARAMETERS, MIN_CHARS, high_entropy
from .redact_gate import TriggerIndex
from .redact_harmless import MARK, harmless, placeholder, wordlike

#: Bumped when the code that decides (not only the patterns) changes what is redacted.
ENGINE_REVISION = 3

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
_SECRET_WORD_SCAN = re.compile(_SECRET_WORDS.replace("[_-]?", r"[_\-\s]{0,3}"))
_SECRET_WORD_AT = re.compile(_SECRET_WORDS, re.IGNORECASE)
# The prefix is bounded: an unbounded one made "a.a.a.…" quadratic (minutes for 64k characters).
_SECRET_NAME = r"[A-Za-z0-9_.\-]{0,40}?" + _SECRET_WORDS
_NAME_CHARS = re.compile(r"^[A-Za-z0-9_.\-$@]{1,160}$")
# A value: quoted, or up to the next space ("Tr0ub4dor&3" is one password).
_VALUE = r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"}<>]+)"
_NAME_WORDS = ("pass", "pwd", "pw", "secret", "token", "key", "credential", "creds", "auth", "cookie")
_SESSION_KEY_WORDS = ("session_key", "session-key", "sessionkey")
# Words that make a name key-like: its value goes if it is a long high-entropy token.
_KEY_LIKE = ("key", "secret", "token", "passw", "pwd", "credential", "creds", "auth", "access", "api",
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
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "apikey", "api-key", "api-token", "negotiate",
                           "ntlm", "hoba", "mutual", "aws4-hmac-sha256", "sswss", "ssws"})
# Declaration words after a name ("var apiToken string = …", "token: str = …"): the name is before them.
_TYPE_WORDS = frozenset({"string", "str", "int", "var", "val", "let", "const", "final", "static", "char", "bytes",
                         "secret", "text"})
_NOT_KEY_LIKE = ("monkey", "donkey", "turkey", "keyboard", "keyword", "keynote", "keyframe", "author", "accessor",
                 "accessib", "capital", "rapid", "tokenizer", "sigma", "signal", "design", "assign", "csrf", "xsrf",
                 "authenticity")


@dataclass(frozen=True)
class _Rule:
    kind: str
    regex: re.Pattern
    any_of: tuple[str, ...]          # at least one must occur (lower-cased text)
    all_of: tuple[str, ...] = ()     # and all of these
    token: bool = False              # the secret is one long token (vendor key formats)
    # Keyed rules: the family a match's value belongs to, or None to keep it.
    judge: Callable[[re.Match, str, RuleSet], str | None] | None = None
    # The rule's value is judged by its name (judge_pair): without a secret word in the text, only a
    # long token can be a secret, so the rule is not worth running on text without one.
    keyed: bool = False
    min_chars: int = 0               # a match holds a run of at least this many non-space characters


def _rule(kind, pattern, any_of, all_of=(), flags=re.IGNORECASE, judge=None, keyed=False, min_chars=0):
    """A contextual rule: a name or command around the secret ("password=", "mysql -p"). The group
    ``secret`` (or a value group) is what goes; the rest of the match stays."""
    return _Rule(kind, re.compile(pattern, flags), tuple(any_of), tuple(all_of), judge=judge, keyed=keyed,
                 min_chars=min_chars)


def _vendor(kind, pattern, any_of, judge=None):
    """A vendor key format: one long, case-sensitive token with a known prefix or shape."""
    regex = re.compile(pattern)
    return _Rule(kind, regex, tuple(any_of), token=True, judge=judge, min_chars=_min_width(regex))


def _min_width(regex: re.Pattern) -> int:
    """The fewest characters a match of ``regex`` has."""
    return re._parser.parse(regex.pattern, regex.flags).getwidth()[0]  # type: ignore[attr-defined]


# ------------------------------------------------------------------ keyed values

# The value after a name and an operator, read without consuming it (a lookahead), so a value the
# rule keeps (``ConnectionString="…;Password=x"``) is still searched for the names inside it.
# A template or interpolation is read whole ({{ .Values.Password }}, ${var.x}, {Name}); an unquoted value
# runs to a space, and a comma or semicolon inside it is the value's (Zq7h,unter22xK) unless another
# name follows it (x,user=bob; Pwd=x;Database=y; db;User Id=sa).
_VALUE_AHEAD = (r"(?=(?:\\?\"(?P<dq>(?:[^\"\\\n]|\\[^\"\n])*)\\?\"|'(?P<sq>[^'\n]*)'|`(?P<bq>[^`\n]*)`"
                r"|(?P<tpl>\$?\{\{[^{}\n]{0,200}\}\}|\$\{[^{}\n]{0,200}\}|\{\w{0,60}\})"
                r"|(?P<bare>(?:[^\s'\"`}<>\\,;“”‘’«»「」]|\\(?![nrt\"'\\])"
                r"|[,;]{1,8}(?![\w.\-]+(?:[ \t]+[\w.\-]+)?[ \t]*[=:])(?=[^\s'\"`}<>\\,;“”‘’«»「」]))+)))")
# A name: an identifier, perhaps with up to two words before the operator ("adobe client secret =").
_KEY_NAME = (r"(?P<name>(?<![\w$@.\-])[$@]?[A-Za-z_][\w.\-]{0,60}(?:[ \t]{1,3}[A-Za-z_][\w.\-]{0,30}){0,2}?)"
             r"(?:[ \t]{0,3}(?P<nq>\\?[\"'`]))?\]?")
# =, :, :=, ::=, ?=, .=, +=, =>, ==, ||, "name", "value" (quoted names only), R's <-, a typed
# declaration's ": String =", a fullwidth colon and arrows (" -> " with spaces: $a->b is code). Up to 20
# spaces before it: Terraform and aligned YAML line the operators up.
_OPERATOR = (r"[ \t]{0,20}(?P<op>:[ \t]*(?:(?-i:[A-Z])[\w.\[\]<>]{0,30}|str|string|int|bytes|any)\??"
             r"[ \t]+=(?=[ \t]*[\"'`])"
             r"|:{1,3}=|\?\?=|\?=|\.=|\+=|=>"
             r"|!==?|===?|=|:|：|\|\||,|<-|[→⇒➜⟶]|(?<=[ \t])->(?=[ \t]))[ \t]{0,3}")
_VALUE_GROUPS = ("secret", "dq", "sq", "bq", "tpl", "bare")
_QUOTE_OF: dict[str | None, str] = {"dq": '"', "sq": "'", "bq": "`"}   # the quote a value group stands in


def _harmless(name: str, value: str, quote: str | None = None) -> bool:
    return harmless(name, value, quote)


# Bare words that are also ordinary English: after "secret:" or "key:" a short
# plain word is prose ("My secret: I love jazz"), not a credential. Not after a password word:
# "password: sunshine" is YAML's form of a password — only a word that says the password's state is kept.
_PROSE_NAMES = frozenset({"secret", "key", "auth", "cookie", "token", "session"})
_PASSWORD_STATES = frozenset({"required", "optional", "incorrect", "invalid", "wrong", "expired", "changed",
                              "reset", "hidden", "empty", "missing", "unknown", "protected", "set", "unset",
                              "ok", "saved", "updated", "accepted", "rejected", "forgotten", "is", "was", "the",
                              "a", "an", "for", "of", "to", "and", "or", "not"})


def _prose(name: str, op: str, value: str) -> bool:
    """"secret: I…" reads as a sentence: an ordinary word, a colon, a short plain word."""
    if op not in (":", "：") or not value.isalpha():
        return False
    last = name.split()[-1].strip("\"'").lower() if name.split() else ""
    return (last in _PROSE_NAMES and len(value) < 12) or value.lower() in _PASSWORD_STATES


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
    if not any(word in lowered for word in _NAME_WORDS + _SESSION_KEY_WORDS) or not _NAME_CHARS.match(flat):
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
    if not any(word in lowered for word in _KEY_LIKE) or any(word in lowered for word in _NOT_KEY_LIKE):
        return False
    words = _words(name)
    if not words:
        return False
    if words[-1] in _NOT_SECRET_WORDS and not (words[-1] == "id" and any("session" in w or w == "sid"
                                                                        for w in words)):
        return False
    # key_down_event, keyVaultToStoreSecrets: the word after the key-like one says what it is about.
    after = [words[i + 1] for i, w in enumerate(words[:-1]) if any(k in w for k in _KEY_LIKE)]
    if after and after[-1] in _NOT_SECRET_WORDS:
        return False
    return not (len(words) > 1 and any(word in _NOT_SECRET_QUALIFIERS for word in words[:-1]))


def _names_family(name: str, words: tuple[str, ...]) -> bool:
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


def _value_of(match: re.Match) -> tuple[str | None, str]:
    """(which value group matched, its text)."""
    for group in _VALUE_GROUPS:
        if group in match.re.groupindex and match.start(group) != -1:
            return group, match.group(group)
    return None, match.group(0)


def _judge_keyed(match: re.Match, value: str, rules: RuleSet) -> str | None:
    """Whether a keyed value (``name op value``) is a secret, and of which family."""
    groups = match.re.groupindex
    name = match.group("name")
    op = (match.group("op") or "").strip() if "op" in groups else "="
    quoted = _value_of(match)[0] in ("dq", "sq", "bq")
    if op == "," and not (quoted and "nq" in groups and match.group("nq")):
        return None                         # "password, username": a list in prose; only "NAME", "v" counts
    if op in ("!=", "!==") and not quoted:
        return None                         # a comparison with a variable, not a literal
    if op == "==" and match.group("op") == "==" and not quoted:
        value = "=" + value                 # "KEY==abc": an assignment of "=abc", not a comparison
    if op == ":" and not quoted and match.group("op") == ":" and _COORDINATE.match(value):
        return None                         # org.slf4j.slf4j-api:jar:1.7.8, io.jsonwebtoken:jjwt-jackson-0.11.2
    group, _ = _value_of(match)
    quote = _QUOTE_OF.get(group)
    if quote is None and value.lower() == re.split(r"[.\s]", name)[-1].lower():
        return None                         # self.password = password: a variable of the same name
    if (op == ":" and group == "bare" and value.isalpha() and len(name.split()) > 1
            and re.match(r"[ \t]+[A-Za-z]", match.string[match.end(group):])):
        return None                         # "Tip for choosing a password: length beats complexity"
    verdict = rules.judge_pair(name, value, op=op, quote=quote)
    if verdict is None and len(op) > 2 and op[0] == ":" and op[-1] == "=" and op[1] not in ":=":
        # ": String =" is a typed declaration, but "Note: ETSYToken = v" is prose before a name = v
        verdict = rules.judge_pair(op[1:-1].strip(" \t?"), value, op="=", quote=quote)
    return verdict


# Maven / Gradle coordinates: "group:artifact:version", written without spaces around the colons.
_COORDINATE = re.compile(r"^(?:(?:jar|pom|war|aar|test|compile|runtime|provided|import)(?::|$)"
                         r"|(?=[\w.\-:]*\d+\.\d+)[\w.\-]+(?::[\w.\-]*)*$)")


def _judge_spoken_password(match: re.Match, value: str) -> str | None:
    """"my password is x", "password for the router: x" — not a state ("is incorrect"), a placeholder, or
    a sentence going on after a colon ("a password: length beats complexity")."""
    name = match.group("name")
    if value.lower() in _PASSWORD_STATES or _harmless(name, value):
        return None
    if name.lower() not in ("pin code", "pw") and not is_secret_name(name):
        return None                         # "password_min_length is 12", "passwordless is on"
    group, _ = _value_of(match)
    if (match.group("colon") and group == "bare" and value.isalpha()
            and re.match(r"[ \t]+[A-Za-z]", match.string[match.end(group):])):
        return None
    return "spoken_password"


def _judge_spoken(match: re.Match, value: str, rules: RuleSet) -> str | None:
    """"the api token is X": only a family's shape or a high-entropy token ("the secret is out" is prose)."""
    return rules.judge_pair(match.group("name"), value, op="is", plain=False)


_KEYED = dict(flags=re.IGNORECASE, judge=_judge_keyed, keyed=True)
# Without a secret word, a keyed value is a secret only as a vendor's shape or a high-entropy token.
_KEYED_MIN_CHARS = min(MIN_CHARS, *(_min_width(re.compile(shape)) for _, _, shape in vendors.KEYED))


def _judge_private_key(match: re.Match, value: str, rules: RuleSet) -> str | None:
    """A private key block with a key in it: ``-----BEGIN PRIVATE KEY-----\nanything\n-----END…`` has none."""
    body = re.sub(r"-----[A-Z0-9 _-]*-----|\s", "", value)
    return "private_key" if len(body) >= 16 or "-----END" not in value else None


def _in_secret_data(match: re.Match, value: str, rules: RuleSet) -> str | None:
    """A value under ``data:`` / ``stringData:`` of a Kubernetes ``kind: Secret`` document."""
    text, start = match.string, match.start()
    document = text.rfind("\n---", 0, start)
    head = text[document + 1 if document >= 0 else 0:]
    end = head.find("\n---")
    head = head if end < 0 else head[:end]
    if not re.search(r"^[ \t]*kind:[ \t]*[\"']?secret[\"']?[ \t]*$", head, re.IGNORECASE | re.MULTILINE):
        return None
    indent = len(match.group("indent"))
    for line in reversed(text[:start].splitlines()):
        stripped = line.lstrip(" \t")
        if stripped and len(line) - len(stripped) < indent:
            return "kubernetes_secret" if re.match(r"(?:string)?data:[ \t]*$", stripped, re.IGNORECASE) else None
    return None


def _judge_spaced(match: re.Match, value: str, rules: RuleSet) -> str | None:
    """``set -gx DB_PASSWORD v``, ``git config user.password v``: the name says whether v is a secret."""
    quote = _QUOTE_OF.get(_value_of(match)[0])
    return rules.judge_pair(match.group("name"), value, op=" ", quote=quote)


def _judge_vault_legacy(match: re.Match, value: str, rules: RuleSet) -> str | None:
    """``s.`` and 24 letters and digits is also code (``s.AcceptanceTimeoutSeconds``): a token has a digit."""
    return "vault" if any(c.isdigit() for c in value[2:]) else None


# ------------------------------------------------------------------ the rules


RULES: tuple[_Rule, ...] = (
    _rule("private_key",
          r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
          r"(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|(?<=[\s\S]{64})KEY(?: BLOCK)?-----|\Z)",
          ["private key"], judge=_judge_private_key),
    # Vendor formats first: a token in a URL's user-info is its vendor's (and all of it, as Sidekiq's is).
    *(_vendor(kind, pattern, any_of) for kind, pattern, any_of in vendors.TOKENS),
    # scheme://user:password@host — keep the user and host.
    _rule("url_credentials",
          r"\b[a-zA-Z][a-zA-Z0-9+.\-]{0,30}://[^\s:/@]{0,256}:(?P<secret>[^\s@/]{1,512})(?=@)",
          ["@"], ["://"]),
    # https://<token>@github.com — a token as the whole user-info
    _rule("url_token_user", r"\b[a-zA-Z][a-zA-Z0-9+.\-]{0,30}://(?P<secret>[A-Za-z0-9_\-]{20,256})(?=@)",
          ["@"], ["://"]),
    _rule("url_param",
          r"[?&;#](?:access_token|refresh_token|id_token|token|auth|api_key|apikey|api-key|key|"
          r"secret|client_secret|password|passwd|pwd|sig|signature|x-amz-signature|x-amz-credential|"
          r"x-amz-security-token|code|session|sessionid|sid|_gitlab_session)=(?P<secret>[^&#\s;\"'`<>]+)",
          ["token=", "auth=", "key=", "secret=", "password=", "passwd=", "pwd=", "sig=", "signature=",
           "credential=", "code=", "session=", "sessionid=", "sid="],
          # a URL in code ends at its quote; ?access_token=ACCESS_TOKEN is a name for the value, not it
          judge=lambda m, value, rules: None if _harmless("", value) else "url_param"),
    # Authorization: Bearer x / Api-Token x / SSWS x / x — any one scheme word, then the credential.
    _rule("auth_header",
          r"\b(?:proxy-)?authorization[\"']?\s*[:=][\"'\s]*(?:[A-Za-z][\w\-]{1,20}[ \t]+)?"
          r"(?P<secret>[A-Za-z0-9\-._~+/=:@]{6,})", ["authorization"],
          judge=lambda m, value, rules: None if value.lower() in _AUTH_SCHEMES else "auth_header"),
    _rule("bearer", r"\bbearer\s+(?P<secret>[A-Za-z0-9\-._~+/]{8,}=*)", ["bearer"]),
    _rule("aws_cli_secret",
          r"\b(?:aws_secret_access_key|aws_session_token|secret_access_key)\s+(?P<secret>[^\s=:]\S*)",
          ["secret_access_key", "aws_session_token"]),
    _rule("gitlab", r"\b_gitlab_session=(?P<secret>[0-9a-z]{32})", ["_gitlab_session="]),
    # mysql -pSECRET / sshpass -p SECRET / curl -u user:SECRET
    _rule("mysql_password",
          r"\b(?:mysql|mysqldump|mariadb|mysqladmin)\b[^\n|;&]{0,200}?\s-p(?P<secret>[^\s\-][^\s]*)",
          ["mysql", "mariadb"], ["-p"]),
    _rule("sshpass", r"\bsshpass\s+-p\s*(?P<secret>\S+)", ["sshpass"]),
    _rule("login_password",
          r"\b(?:docker|podman|nerdctl|buildah)\s+login\b[^\n|;&]{0,200}?\s-p\s+(?P<secret>\S+)",
          ["login"], ["-p"]),
    _rule("redis_password", r"\bredis-cli\b[^\n|;&]{0,200}?\s(?:-a|--pass)\s+(?P<secret>\S+)", ["redis-cli"]),
    _rule("smb_password", r"\s(?:-U|--user)[\s=]+[^\s%]+%(?P<secret>\S+)", ["-u", "--user"], ["%"]),
    # A cookie header is name=value pairs; "cookie: chocolate chip" is not one.
    _rule("cookie_header", r"\b(?:set-)?cookie\s*:\s*(?P<secret>[^\n=]{1,200}=[^\n]{0,4000})", ["cookie"]),
    # -u user:pw / --user "user:pw" / -u ':pw' / --user kevin:'pw' / --user "{id}":"{pw}"
    _rule("curl_user",
          r"(?:\s-u|\s--user)(?:=|[ \t]+)(?P<user>\"[^\"\n:]*\"|'[^'\n:]*'|[^\s:\"']*):"
          r"(?P<secret>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"']+)", ["-u", "--user"], [":"],
          judge=lambda m, value, rules: None if _curl_placeholder(m.group("user"), value) else "curl_user"),
    _rule("curl_user", r"(?:\s-u|\s--user)(?:=|[ \t]+)(?P<q>[\"'])(?P<secret>[^\"'\s:]{3,}):(?P=q)",
          ["-u", "--user"], [":"]),
    _rule("curl_user", r"(?:\s-u|\s--user)(?:=|[ \t]+)(?P<q>[\"'])(?P<user>[^\"'\n:]*):(?P<secret>[^\"'\n]+)(?P=q)",
          ["-u", "--user"], [":"],
          judge=lambda m, value, rules: None if _curl_placeholder(m.group("user"), value) else "curl_user"),
    # .netrc: machine github.com login bob password x
    _rule("netrc_password",
          r"(?:\bmachine[ \t]+\S+|\bdefault\b)(?:\s+(?:login|account|port)[ \t]+\S+){0,3}\s+password[ \t]+"
          r"(?P<secret>\S+)", ["password"], ["machine"]),
    # macOS keychain: security add-generic-password -a bob -s svc -w x
    _rule("keychain_password",
          r"\bsecurity[ \t]+add-(?:generic|internet)-password\b[^\n|;&]{0,300}?[ \t]-w[ \t]+"
          r"(?P<secret>\"[^\"\n]*\"|'[^'\n]*'|[^\s\-]\S*)", ["add-generic-password", "add-internet-password"]),
    # NAME VALUE with a space: fish's set -gx, Windows' setx, git config, npm config set, dotnet user-secrets
    _rule("spaced_setting",
          r"(?:\bset(?:[ \t]+-[A-Za-z]+|[ \t]+--[a-z-]+)*|\bsetx|\bgit[ \t]+config"
          r"(?:[ \t]+(?:--file|-f|--blob)[ \t]+\S+|[ \t]+--?[\w-]+)*|\b(?:npm|yarn|pnpm)[ \t]+config[ \t]+set"
          r"|\bdotnet[ \t]+user-secrets[ \t]+set|\blaunchctl[ \t]+setenv)[ \t]+(?P<name>[\w.\-:]{1,80})[ \t]+"
          + _VALUE_AHEAD, ("set", "config"), judge=_judge_spaced, keyed=True),
    # YAML's value on the next line: "password:\n  x", "token: |\n  x" (not the next key: "auth:\n  user: bob")
    _rule("next_line",
          r"(?P<name>(?<![\w$@.\-])[A-Za-z_][\w.\-]{0,60})[ \t]{0,20}(?P<op>:)[ \t]*(?:[|>][+-]?[ \t]*)?\r?\n"
          r"[ \t]+(?![^\s:]+(?::+[^\s:]+)*[ \t]*:(?:[ \t\r\n]|$))(?!-[ \t]|#)" + _VALUE_AHEAD, (), **_KEYED),
    # Kubernetes: every value under data: / stringData: of a kind: Secret
    _rule("kubernetes_secret",
          r"^(?P<indent>[ \t]+)[\w.\-]{1,100}:[ \t]*(?:[|>][+-]?[ \t]*\r?\n[ \t]+)?[\"']?"
          r"(?P<secret>[A-Za-z0-9+/_\-]{4,}={0,2})[\"']?[ \t]*$", ["data:"], ["kind", "secret"],
          flags=re.IGNORECASE | re.MULTILINE, judge=_in_secret_data),
    # XML: <password>x</password>, <adobeToken>\n  x\n</adobeToken>, <add key="Password" value="x"/>
    _rule("xml_element",
          r"<(?P<name>[A-Za-z_][\w:.\-]{0,60})(?:\s[^<>]{0,200})?>[ \t\r\n]*"
          r"(?P<secret>[^<\s](?:[^<]{0,400}[^<\s])?)[ \t\r\n]*</(?P=name)>",
          (), flags=re.IGNORECASE, judge=lambda m, value, rules: rules.judge_pair(m.group("name"), value), keyed=True),
    _rule("xml_attribute",
          r"\b(?:name|key)\s*=\s*\"(?P<name>[^\"<>]{1,60})\"\s+value\s*=\s*\"(?P<secret>[^\"]*)\"",
          ("value",), flags=re.IGNORECASE, judge=lambda m, value, rules: rules.judge_pair(m.group("name"), value),
          keyed=True),
    # --password=x / --token x / -ClientSecret 'x' / -storepass x
    _rule("cli_flag", r"(?<![\w-])--?(?P<name>[A-Za-z][\w-]{1,40})(?:=|[ \t]+)" + _VALUE_AHEAD, (), **_KEYED),
    # NAME=value, NAME: value, "name": "value", name := "value", $name .= 'value', "name" => "value"…
    _rule("assignment", _KEY_NAME + _OPERATOR + _VALUE_AHEAD, (), **_KEYED),
    # "the api token is X"
    _rule("spoken_key",
          r"(?P<name>\b(?:[A-Za-z_][\w\-]{0,60}[ \t]){0,2}?(?:key|token|secret|credential|signature)s?)"
          r"[ \t]+(?:is|was)[ \t]+" + _VALUE_AHEAD, ("key", "token", "secret", "credential", "signature"),
          judge=_judge_spoken, min_chars=_KEYED_MIN_CHARS),
    # "my passphrase is correct horse battery staple": the rest of the sentence
    _rule("spoken_passphrase", r"\bpassphrase\s+(?:is|was)\s+(?P<secret>[^.\n;。]{1,200})", ["passphrase"]),
    # "my password is hunter2", "the wifi password for home is x", "password for the router: x", "my password
    # is 'open sesame x'" (a quoted value whole), "my DB_PASSWORD is x", "my db_password_prod is x"
    _rule("spoken_password",
          r"(?P<name>(?<![\w.\-])[\w.\-]{0,40}?(?:password|passwd|pwd|passcode)[\w.\-]{0,40}|pin code|(?<![a-z])pw)"
          r"(?:[ \t]+(?:for|of|to|on|at)[ \t]+[^\n:=：.?!]{1,60}?)?"
          r"(?:[ \t]+(?:is|was)[ \t]+|[ \t]*(?P<colon>[:：])[ \t]*)" + _VALUE_AHEAD,
          ["password", "passwd", "pwd", "pw", "passcode", "pin code"],
          judge=lambda m, value, rules: _judge_spoken_password(m, value)),
    # "密码是 abc123", "密码123456"
    _rule("spoken_password",
          r"(?:(?:密码|口令|密钥|秘钥|令牌)\s*(?:是|为|：|:)\s*"
          r"|(?:密码|口令|密钥|秘钥|令牌)\s*(?=[!-~]{4,}))"  # "密码 abc123" / "密码abc123": an ASCII token right after
          r"(?P<secret>[^\s，。,;；]+)",
          ["密码", "口令", "密钥", "秘钥", "令牌"]),
)


# -u user:password, -u username:token, -u 'test:test': the words of an example, not credentials.
_CURL_PLACEHOLDERS = frozenset({"password", "pass", "passwd", "pwd", "token", "secret", "apikey", "api_key", "key",
                                "xxx", "yyy", "test"})


def _curl_placeholder(user: str, password: str) -> bool:
    """``-u $USER:$PASS``, ``-u user:<password>``, ``-u 1000:1000`` (docker's uid:gid), ``-u user:pass`` keep
    their value."""
    plain, user = password.strip("\"'"), user.strip("\"'")
    return (_harmless("", plain) or plain.startswith(("$", "{{", "[", "<")) or user.startswith("<")
            or (user.isdigit() and plain.isdigit()) or plain.lower() in _CURL_PLACEHOLDERS
            or (plain == user and len(plain) <= 8))


# ------------------------------------------------------------------ the rule set


class RuleSet:
    """One version of the redaction rules: the rules, the vendor families their keyed values know, and
    whether key-like names take high-entropy values. :attr:`version` names it (a hash of all that), so the
    memory can tell what it stored under older rules."""

    def __init__(self, rules: tuple[_Rule, ...] = RULES,
                 families: tuple[tuple[str, tuple[str, ...], str], ...] = vendors.KEYED, entropy: bool = True):
        self.rules = rules
        self.families = tuple((kind, words, re.compile(shape, re.IGNORECASE)) for kind, words, shape in families)
        # Which families a name may name, found with one scan (judge_pair runs for every name = value).
        self._family_index = TriggerIndex([words for _, words, _ in families])
        self.entropy = entropy
        self._family_rows = families
        keyed_words = {w for _, words, _ in families for w in words} | set(_KEY_LIKE) | set(_NAME_WORDS)
        # A rule without triggers of its own (the keyed ones) runs when any key-like word occurs.
        triggers = [rule.any_of or tuple(sorted(keyed_words)) for rule in rules]
        self._index = TriggerIndex(triggers)
        # The cheap first look (see rules_for): a rule that can take a short value has a word of these in
        # its triggers (a context rule) or needs a name that says it holds a secret (a keyed rule: that
        # name holds one of _NAME_WORDS); every other rule needs a run of at least _min_run characters.
        short = {t for r in rules if not (r.token or r.keyed or r.min_chars) for t in r.any_of if t}
        short |= set(_NAME_WORDS) | set(_SESSION_KEY_WORDS)
        self._anchors = tuple(sorted(w for w in short if not any(o != w and o in w for o in short)))
        self._min_run = min([_KEYED_MIN_CHARS] + [r.min_chars for r in rules if r.min_chars])
        # Without an anchor: a vendor token lies inside one long run, so its trigger is looked for there
        # only; the other rules' triggers (key-like words, vendor names) anywhere.
        self._token_index = TriggerIndex([ts if rule.token else () for rule, ts in zip(rules, triggers, strict=True)])
        self._weak_index = TriggerIndex([() if rule.token else tuple(t for t in ts if t and not any(
            anchor in t for anchor in self._anchors)) for rule, ts in zip(rules, triggers, strict=True)])
        self.version = self._digest()

    def _digest(self) -> str:
        parts = [f"engine {ENGINE_REVISION}", f"entropy {self.entropy} {ENTROPY_PARAMETERS}"]
        parts += [f"{r.kind}\x1f{r.regex.pattern}\x1f{r.regex.flags}\x1f{r.any_of}\x1f{r.all_of}" for r in self.rules]
        parts += [f"{kind}\x1f{words}\x1f{shape}" for kind, words, shape in self._family_rows]
        return hashlib.sha256("\x1e".join(parts).encode()).hexdigest()[:16]

    def without(self, *kinds: str) -> RuleSet:
        """These rules less the families ``kinds`` (vendor formats and keyed shapes; "high_entropy" turns
        the entropy rule off): an older rule set, for tests of re-redaction."""
        return RuleSet(tuple(r for r in self.rules if r.kind not in kinds),
                       tuple(f for f in self._family_rows if f[0] not in kinds), self.entropy and
                       "high_entropy" not in kinds)

    @property
    def kinds(self) -> list[str]:
        """Every family name a count can carry."""
        names = {r.kind for r in self.rules} | {f[0] for f in self._family_rows} | {"secret_field"}
        return sorted(names | ({"high_entropy"} if self.entropy else set()))

    # -------------------------------------------------------------- deciding

    def judge_pair(self, name: str, value: str, *, op: str = "=", plain: bool = True,
                   quote: str | None = None) -> str | None:
        """The family of a value assigned to ``name`` if it is a secret, else None. ``plain=False`` (a
        value in prose): only a vendor shape or a high-entropy token counts, not any value. ``quote``: the
        quote the value stood in, if any."""
        value = value.strip()
        if not value or _harmless(name, value, quote) or value.lower() in _AUTH_SCHEMES:
            return None
        words = name.split()
        while len(words) > 1 and words[-1].lower() in _TYPE_WORDS:
            words.pop()
        name = " ".join(words)
        if plain and is_secret_name(name):
            return None if _prose(name, op, value) else "assignment"
        lowered = name.lower()
        vendor = None
        for position in self._family_index.candidates(lowered):
            kind, family_words, shape = self.families[position]
            if _names_family(name, family_words):
                if shape.fullmatch(value):
                    return kind
                vendor = vendor or kind
        if vendor and self.entropy and high_entropy(value):
            return vendor                   # "ARTIFACTORY=<a long random token>": that vendor's, whatever the length
        if self.entropy and (key_like(name) or (not plain and is_secret_name(name))) and high_entropy(value):
            return "high_entropy"
        return None

    # -------------------------------------------------------------- redacting

    def rules_for(self, text: str) -> tuple[_Rule, ...]:
        """The rules that could match ``text``, in order: a trigger of theirs occurs, all their context words
        do, and the text has a run of non-space characters as long as their shortest secret (a keyed rule's
        value, when no secret word is there to say any value is one, is a vendor shape or 16+ characters).
        Running them on a part of ``text`` gives what running every rule would."""
        lowered = text.lower()
        longest = None
        if any(anchor in lowered for anchor in self._anchors):
            candidates = self._index.candidates(lowered)
        else:
            runs = [run for run in _runs(text) if len(run) >= self._min_run]
            if not runs:
                return ()                    # most text: no word that says a secret follows, no long token
            longest = max(map(len, runs))
            candidates = sorted({*self._token_index.candidates(" ".join(runs).lower()),
                                 *self._weak_index.candidates(lowered)})
        if not candidates:
            return ()
        strong = None
        selected = []
        for position in candidates:
            rule = self.rules[position]
            if rule.all_of and not all(word in lowered for word in rule.all_of):
                continue
            need = rule.min_chars
            if rule.keyed:
                if strong is None:
                    strong = _SECRET_WORD_SCAN.search(lowered) is not None
                need = need if strong else max(need, _KEYED_MIN_CHARS)
            if need:
                if longest is None:
                    longest = _longest_run(text)
                if longest < need:
                    continue
            selected.append(rule)
        return tuple(selected)

    def may_need_redaction(self, text: str) -> bool:
        """False when no rule could match ``text``."""
        return bool(self.rules_for(text))

    def redact_text(self, text: str, counts: Counter | None = None, found: list[str] | None = None,
                    rules: tuple[_Rule, ...] | None = None) -> str:
        """``text`` with secrets replaced by ``[REDACTED]``; the families of the replacements tallied in
        ``counts`` and the secrets removed appended to ``found``. ``rules``: the :meth:`rules_for` a text
        that holds this one (a payload's fields joined), found once for all its parts."""
        if not text:
            return text
        for rule in self.rules_for(text) if rules is None else rules:
            redacted = self._apply(rule, text, counts, found)
            if redacted is not text:
                text = redacted
        return text

    def _apply(self, rule: _Rule, text: str, counts: Counter | None, found: list[str] | None) -> str:
        edits: list[tuple[int, int, str]] = []
        covered = -1
        for match in rule.regex.finditer(text):
            group, _ = _value_of(match)
            start, end = match.span(group) if group else match.span()
            if group == "bare":
                while end > start and text[end - 1] in ".,;":    # a sentence's full stop is not the secret's
                    end -= 1
            if end <= start or start < covered:
                continue
            secret = text[start:end]
            if not secret.replace(MARK, "").strip(" \"'"):
                continue                      # nothing left to remove: counts nothing
            if placeholder(secret) or (rule.token and wordlike(secret, 0.8, numbers=False, capitals=False)):
                continue                      # ghp_xxxx…, hf_requiredCharacteristicTypes: not a key
            kind = rule.judge(match, secret, self) if rule.judge else rule.kind
            if kind is None:
                continue
            edits.append((start, end, kind))
            covered = end
        if not edits:
            return text
        out, position = [], 0
        for start, end, kind in edits:
            out += [text[position:start], MARK]
            if counts is not None:
                counts[kind] += 1
            if found is not None:
                found.append(text[start:end])
            position = end
        out.append(text[position:])
        return "".join(out)

    def redact_with(self, text: str, context: str) -> str:
        """``text`` redacted, and without the secrets redaction finds in ``context`` (the message it was
        taken from): a quote or a summary of "my password is hunter22" may hold "hunter22" without the words
        that mark it as a secret."""
        found: list[str] = []
        self.redact_text(context, found=found)
        text = self.redact_text(text)
        for secret in sorted({s.strip("\"'") for s in found}, key=len, reverse=True):
            if len(secret) >= MIN_SCRUB_CHARS:
                text = text.replace(secret, MARK)
        return text

    def redact_value(self, value: Any, counts: Counter | None = None, rules: tuple[_Rule, ...] | None = None) -> Any:
        """Redact strings inside JSON-like data; values under secret-named keys go entirely, and a value
        whose key says whose it is (or is key-like) goes when it has that shape (or high entropy)."""
        if isinstance(value, str):
            return self.redact_text(value, counts, rules=rules)
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                clean_key = self.redact_text(key, counts, rules=rules) if isinstance(key, str) else key
                if isinstance(key, str) and self._secret_item(key, item):
                    out[clean_key] = MARK  # whatever its shape: {"password": ["x"]} is a secret too
                    if counts is not None:
                        counts["secret_field"] += 1
                else:
                    out[clean_key] = self.redact_value(item, counts, rules)
            return out
        if isinstance(value, (list, tuple)):
            if value and all(isinstance(item, str) for item in value):
                # Read as one line: the rules for it are its own (the items joined make new contexts).
                return self._redact_argv(list(value), counts)
            return [self.redact_value(item, counts, rules) for item in value]
        return value

    def _secret_item(self, key: str, item: Any) -> bool:
        if item is None or isinstance(item, bool) or item == MARK:
            return False
        if isinstance(item, (str, int, float)) and _harmless(key, str(item)):
            return False
        if is_secret_name(key):
            return True
        return isinstance(item, str) and self.judge_pair(key, item, plain=False) is not None

    def _redact_argv(self, items: list[str], counts: Counter | None) -> list[str]:
        """A list of strings, read as one command line: ["mysql", "-pSECRET"] is redacted in context."""
        if len(items) == 2 and is_secret_name(items[0]) and not _harmless(items[0], items[1]):
            if counts is not None:
                counts["secret_field"] += 1
            return [items[0], MARK]  # a (name, value) pair: ["Authorization", "Basic …"]
        joined = " ".join(items)
        redacted = self.redact_text(joined, counts)
        if redacted == joined:
            return items
        words = redacted.split(" ")
        # Same number of words: each item keeps its place. Otherwise (an item had
        # spaces, or a whole span was blanked) keep the redacted line as one item.
        return words if len(words) == len(items) else [redacted]


_NOT_A_SECRET_CHAR = re.compile(r"[^!-~]+")


def _runs(text: str) -> list[str]:
    """The runs of printable ASCII without spaces: what a token or a key is written in."""
    return text.split() if text.isascii() else _NOT_A_SECRET_CHAR.split(text)


def _longest_run(text: str) -> int:
    return max(map(len, _runs(text)), default=0)


# A secret found in context ("my password is hunter22") is also removed where it stands alone ("hunter22")
# in text derived from it; shorter ones would blank ordinary words and numbers.
MIN_SCRUB_CHARS = 4

#: The rules in force.
CURRENT = RuleSet()
RULES_VERSION = CURRENT.version


def may_need_redaction(text: str) -> bool:
    """False when no rule could match ``text``."""
    return CURRENT.may_need_redaction(text)


def redact_text(text: str, counts: Counter | None = None, found: list[str] | None = None) -> str:
    """Return ``text`` with secrets replaced by ``[REDACTED]``; tally the families of the replacements in
    ``counts``, and append the secrets removed to ``found``."""
    return CURRENT.redact_text(text, counts, found)


def redact_with(text: str, context: str) -> str:
    """See :meth:`RuleSet.redact_with`."""
    return CURRENT.redact_with(text, context)


def redact_value(value: Any, counts: Counter | None = None) -> Any:
    """See :meth:`RuleSet.redact_value`."""
    return CURRENT.redact_value(value, counts)
