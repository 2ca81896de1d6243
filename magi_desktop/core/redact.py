"""Secret redaction, applied to every payload before anything is stored or indexed.

Each rule is a regex plus the cheap substrings that must occur for it to
match at all: a lower-cased substring test costs a fraction of a microsecond,
while a regex scan of a sentence costs tens, so most texts are never scanned.
A rule's replacement keeps the non-secret part of the match (the flag name,
the URL's user and host, the variable name, the operator and the quotes) so the
memory still says *what* happened — "ran mysql with a password" — without the
secret. Redaction is deterministic, so a replayed payload still dedupes to the
same event.

Three kinds of rule (DESIGN §14):

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
from .redact_entropy import ENTROPY_PARAMETERS, high_entropy

MARK = "[REDACTED]"
#: Bumped when the code that decides (not only the patterns) changes what is redacted.
ENGINE_REVISION = 2

# Names whose value is a secret, in env vars, config files, JSON and CLI flags.
_SECRET_WORDS = (
    r"(?:password|passwd|passphrase|passcode|pwd|secret|token|tokens|api[_-]?key|apikey|access[_-]?key|"
    r"secret[_-]?key|private[_-]?key|auth[_-]?key|account[_-]?key|sharedaccesskey|credentials?|creds|"
    r"client[_-]?secret|session[_-]?key|authorization|cookie|storepass|keypass|passout|passin|"
    # short words only as a whole word or after a separator: db_pass, auth — not bypass, author
    r"(?<![A-Za-z0-9])(?:pass|auth))"
)
# The prefix is bounded: an unbounded one made "a.a.a.…" quadratic (minutes for 64k characters).
_SECRET_NAME = r"[A-Za-z0-9_.\-]{0,40}?" + _SECRET_WORDS
_SECRET_KEY = re.compile(r"^[A-Za-z0-9_.\-$@]{0,100}?" + _SECRET_WORDS + r"$", re.IGNORECASE)
# A value: quoted, or up to the next space ("Tr0ub4dor&3" is one password).
_VALUE = r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"}<>]+)"
_NAME_WORDS = ("pass", "pwd", "secret", "token", "key", "credential", "creds", "auth", "cookie")
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
})
# Words before "key" that make it a lookup key, not a credential (``sort_key``, ``primary_key``).
_NOT_SECRET_QUALIFIERS = frozenset({"public", "pub", "primary", "foreign", "bucket", "sort", "partition", "cache",
                                    "idempotency", "dedupe", "range", "row", "lookup", "map", "dict", "object",
                                    "hash", "index", "sequence", "schema", "composite", "unique", "natural"})
# Authorization schemes: "Authorization: Bearer $TOKEN" names the scheme of a credential that is not there.
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "apikey", "api-key", "api-token", "negotiate",
                           "ntlm", "hoba", "mutual", "aws4-hmac-sha256", "sswss", "ssws"})
# Declaration words after a name ("var apiToken string = …", "token: str = …"): the name is before them.
_TYPE_WORDS = frozenset({"string", "str", "int", "var", "val", "let", "const", "final", "static", "char", "bytes",
                         "secret", "text"})
_NOT_KEY_LIKE = ("monkey", "donkey", "turkey", "keyboard", "keyword", "keynote", "keyframe", "author", "accessor",
                 "accessib", "capital", "rapid", "tokenizer", "sigma", "signal", "design", "assign")


@dataclass(frozen=True)
class _Rule:
    kind: str
    regex: re.Pattern
    any_of: tuple[str, ...]          # at least one must occur (lower-cased text)
    all_of: tuple[str, ...] = ()     # and all of these
    token: bool = False              # the secret is one long token (vendor key formats)
    # Keyed rules: the family a match's value belongs to, or None to keep it.
    judge: Callable[[re.Match, str, RuleSet], str | None] | None = None


def _rule(kind, pattern, any_of, all_of=(), flags=re.IGNORECASE, judge=None):
    """A contextual rule: a name or command around the secret ("password=", "mysql -p"). The group
    ``secret`` (or a value group) is what goes; the rest of the match stays."""
    return _Rule(kind, re.compile(pattern, flags), tuple(any_of), tuple(all_of), judge=judge)


def _vendor(kind, pattern, any_of):
    """A vendor key format: one long, case-sensitive token with a known prefix or shape."""
    return _Rule(kind, re.compile(pattern), tuple(any_of), token=True)


# ------------------------------------------------------------------ keyed values

# The value after a name and an operator, read without consuming it (a lookahead), so a value the
# rule keeps (``ConnectionString="…;Password=x"``) is still searched for the names inside it.
_VALUE_AHEAD = (r"(?=(?:\\?\"(?P<dq>(?:[^\"\\\n]|\\[^\"\n])*)\\?\"|'(?P<sq>[^'\n]*)'|`(?P<bq>[^`\n]*)`"
                r"|(?P<bare>(?:[^\s'\"`}<>\\,;“”‘’«»「」]|\\(?![nrt\"'\\]))+)))")
# A name: an identifier, perhaps with up to two words before the operator ("adobe client secret =").
_KEY_NAME = (r"(?P<name>(?<![\w$@.\-])[$@]?[A-Za-z_][\w.\-]{0,60}(?:[ \t]{1,3}[A-Za-z_][\w.\-]{0,30}){0,2}?)"
             r"[ \t]{0,3}(?P<nq>\\?[\"'`])?\]?")
# =, :, :=, ::=, ?=, .=, +=, =>, ==, ||, "name", "value" (quoted names only), R's <-, and a typed
# declaration's ": String =".
_OPERATOR = (r"[ \t]{0,3}(?P<op>:[ \t]*(?:(?-i:[A-Z])[\w.\[\]<>]{0,30}|str|string|int|bytes|any)\??"
             r"[ \t]+=(?=[ \t]*[\"'`])"
             r"|:{1,3}=|\?\?=|\?=|\.=|\+=|=>"
             r"|!==?|===?|=|:|\|\||,|<-)[ \t]{0,3}")
_VALUE_GROUPS = ("secret", "dq", "sq", "bq", "bare")

# Values that are clearly not secrets even after a secret-looking name ("token: null",
# "password=$DB_PASSWORD", "password=[REDACTED]", "<your token>", "${{ secrets.X }}", "xxxx").
_HARMLESS_VALUE = re.compile(
    r"^[\"'`]?(?:true|false|null|nil|none|undefined|\$\{?\w+\}?|\[REDACTED\]|<[^<>]*>|\{\{.*\}\}|\$\{\{.*\}\}"
    r"|\$\(.*|%\w+%|x{3,}|\*{3,}|\.{3}|…)?[\"'`]?$", re.IGNORECASE)
# Numbers are harmless only after names that count tokens ("max_tokens=512");
# after any other secret name a number may be the secret (PGPASSWORD=123456).
_COUNT_NAME = re.compile(r"tokens\b|tokens?[_-]?(?:count|limit|used|budget)|max[_-]?tokens?", re.IGNORECASE)
_NUMBER = re.compile(r"^[\"']?\d{1,9}[\"']?$")


def _harmless(name: str, value: str) -> bool:
    return bool(_HARMLESS_VALUE.match(value) or (_NUMBER.match(value) and _COUNT_NAME.search(name)))


# Bare words that are also ordinary English: after "secret:" or "key:" a short
# plain word is prose ("My secret: I love jazz"), not a credential.
_PROSE_NAMES = frozenset({"secret", "key", "auth", "cookie", "pass", "token", "session", "password"})


def _prose(name: str, op: str, value: str) -> bool:
    """"secret: I…" reads as a sentence: an ordinary word, a colon, a short plain word."""
    last = name.split()[-1].strip("\"'").lower() if name.split() else ""
    return op == ":" and last in _PROSE_NAMES and value.isalpha() and len(value) < 12


def _words(name: str) -> list[str]:
    """``adobeClientID`` / ``ADOBE_CLIENT_ID`` / ``adobe-client id`` → ["adobe", "client", "id"]."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def is_secret_name(name: str) -> bool:
    """The name says its value is a secret: ``password``, ``DB_PASS``, ``adobeToken``, ``client_secret``."""
    flat = "_".join(name.split()).strip("\"'`$@")
    lowered = flat.lower()
    return any(word in lowered for word in _NAME_WORDS + _SESSION_KEY_WORDS) and bool(_SECRET_KEY.match(flat))


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
    return not (len(words) > 1 and any(word in _NOT_SECRET_QUALIFIERS for word in words[:-1]))


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
    return rules.judge_pair(name, value, op=op)


def _judge_spoken(match: re.Match, value: str, rules: RuleSet) -> str | None:
    """"the api token is X": only a family's shape or a high-entropy token ("the secret is out" is prose)."""
    return rules.judge_pair(match.group("name"), value, op="is", plain=False)


_KEYED = dict(flags=re.IGNORECASE, judge=_judge_keyed)


# ------------------------------------------------------------------ the rules


RULES: tuple[_Rule, ...] = (
    _rule("private_key",
          r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
          r"(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|(?<=[\s\S]{64})KEY(?: BLOCK)?-----|\Z)",
          ["private key"]),
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
          r"x-amz-security-token|code|session|sessionid|sid|_gitlab_session)=(?P<secret>[^&#\s]+)",
          ["token=", "auth=", "key=", "secret=", "password=", "passwd=", "pwd=", "sig=", "signature=",
           "credential=", "code=", "session=", "sessionid=", "sid="]),
    *(_vendor(kind, pattern, any_of) for kind, pattern, any_of in vendors.TOKENS),
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
    # XML: <password>x</password>, <adobeToken>\n  x\n</adobeToken>, <add key="Password" value="x"/>
    _rule("xml_element",
          r"<(?P<name>[A-Za-z_][\w:.\-]{0,60})(?:\s[^<>]{0,200})?>[ \t\r\n]*"
          r"(?P<secret>[^<\s](?:[^<]{0,400}[^<\s])?)[ \t\r\n]*</(?P=name)>",
          (), flags=re.IGNORECASE, judge=lambda m, value, rules: rules.judge_pair(m.group("name"), value)),
    _rule("xml_attribute",
          r"\b(?:name|key)\s*=\s*\"(?P<name>[^\"<>]{1,60})\"\s+value\s*=\s*\"(?P<secret>[^\"]*)\"",
          ("value",), flags=re.IGNORECASE, judge=lambda m, value, rules: rules.judge_pair(m.group("name"), value)),
    # --password=x / --token x / -ClientSecret 'x' / -storepass x
    _rule("cli_flag", r"(?<![\w-])--?(?P<name>[A-Za-z][\w-]{1,40})(?:=|[ \t]+)" + _VALUE_AHEAD, (), **_KEYED),
    # NAME=value, NAME: value, "name": "value", name := "value", $name .= 'value', "name" => "value"…
    _rule("assignment", _KEY_NAME + _OPERATOR + _VALUE_AHEAD, (), **_KEYED),
    # "the api token is X"
    _rule("spoken_key",
          r"(?P<name>\b(?:[A-Za-z_][\w\-]{0,60}[ \t]){0,2}?(?:key|token|secret|credential|signature)s?)"
          r"[ \t]+(?:is|was)[ \t]+" + _VALUE_AHEAD, ("key", "token", "secret", "credential", "signature"),
          judge=_judge_spoken),
    # "my passphrase is correct horse battery staple": the rest of the sentence
    _rule("spoken_passphrase", r"\bpassphrase\s+(?:is|was)\s+(?P<secret>[^.\n;。]{1,200})", ["passphrase"]),
    # "my password is hunter2", "密码是 abc123", "密码123456"
    _rule("spoken_password",
          r"(?:\b(?:password|passcode|pin code)\s+(?:is|was)\s+"
          r"|(?:密码|口令|密钥|秘钥|令牌)\s*(?:是|为|：|:)\s*"
          r"|(?:密码|口令|密钥|秘钥|令牌)\s*(?=[!-~]{4,}))"  # "密码 abc123" / "密码abc123": an ASCII token right after
          r"(?P<secret>[^\s，。,;；]+)",
          ["password", "passcode", "pin code", "密码", "口令", "密钥", "秘钥", "令牌"]),
)


def _curl_placeholder(user: str, password: str) -> bool:
    """``-u $USER:$PASS``, ``-u user:<password>``, ``-u 1000:1000`` (docker's uid:gid) keep their value."""
    plain = password.strip("\"'")
    return (_HARMLESS_VALUE.match(plain) is not None or plain.startswith(("$", "{{", "[", "<"))
            or (user.strip("\"'").isdigit() and plain.isdigit()))


# ------------------------------------------------------------------ the rule set


_LONG_TOKEN = re.compile(r"[A-Za-z0-9_\-]{16,}")


class RuleSet:
    """One version of the redaction rules: the rules, the vendor families their keyed values know, and
    whether key-like names take high-entropy values. :attr:`version` names it (a hash of all that), so the
    memory can tell what it stored under older rules."""

    def __init__(self, rules: tuple[_Rule, ...] = RULES,
                 families: tuple[tuple[str, tuple[str, ...], str], ...] = vendors.KEYED, entropy: bool = True):
        self.rules = rules
        self.families = tuple((kind, words, re.compile(shape, re.IGNORECASE)) for kind, words, shape in families)
        self.entropy = entropy
        self._family_rows = families
        keyed_words = {w for _, words, _ in families for w in words} | set(_KEY_LIKE) | set(_NAME_WORDS)
        # A rule without triggers of its own (the keyed ones) runs when any key-like word occurs.
        self._triggers = [(rule, rule.any_of or tuple(sorted(keyed_words))) for rule in rules]
        self._all_triggers = tuple(sorted({t for _, ts in self._triggers for t in ts if t}))
        context = {t for rule, ts in self._triggers if not rule.token for t in ts if t}
        # "pass" already finds "password": scan only for words that contain no other.
        self._context_scan = re.compile("|".join(
            re.escape(word) for word in sorted(context) if not any(o != word and o in word for o in context)))
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

    def judge_pair(self, name: str, value: str, *, op: str = "=", plain: bool = True) -> str | None:
        """The family of a value assigned to ``name`` if it is a secret, else None. ``plain=False`` (a
        value in prose): only a vendor shape or a high-entropy token counts, not any value."""
        value = value.strip()
        if not value or _harmless(name, value) or value.lower() in _AUTH_SCHEMES:
            return None
        words = name.split()
        while len(words) > 1 and words[-1].lower() in _TYPE_WORDS:
            words.pop()
        name = " ".join(words)
        if plain and is_secret_name(name):
            return None if _prose(name, op, value) else "assignment"
        lowered = name.lower()
        vendor = None
        for kind, words, shape in self.families:
            if any(word in lowered for word in words):
                if shape.fullmatch(value):
                    return kind
                vendor = vendor or kind
        if vendor and self.entropy and high_entropy(value):
            return vendor                   # "ARTIFACTORY=<a long random token>": that vendor's, whatever the length
        if self.entropy and (key_like(name) or (not plain and is_secret_name(name))) and high_entropy(value):
            return "high_entropy"
        return None

    # -------------------------------------------------------------- redacting

    def may_need_redaction(self, text: str) -> bool:
        """False when no rule could match ``text``."""
        return self._context_scan.search(text.lower()) is not None or _LONG_TOKEN.search(text) is not None

    def redact_text(self, text: str, counts: Counter | None = None, found: list[str] | None = None) -> str:
        """``text`` with secrets replaced by ``[REDACTED]``; the families of the replacements tallied in
        ``counts`` and the secrets removed appended to ``found``."""
        if not text or not self.may_need_redaction(text):
            return text
        lowered = text.lower()
        present = {t for t in self._all_triggers if t in lowered}
        for rule, triggers in self._triggers:
            if (not present.isdisjoint(triggers) or "" in triggers) and all(s in lowered for s in rule.all_of):
                redacted = self._apply(rule, text, counts, found)
                if redacted is not text:
                    text = redacted
                    lowered = text.lower()
        return text

    def _apply(self, rule: _Rule, text: str, counts: Counter | None, found: list[str] | None) -> str:
        edits: list[tuple[int, int, str]] = []
        covered = -1
        for match in rule.regex.finditer(text):
            group, _ = _value_of(match)
            start, end = match.span(group) if group else match.span()
            if group == "bare":
                while end > start and text[end - 1] in ".,":     # a sentence's full stop is not the secret's
                    end -= 1
            if end <= start or start < covered:
                continue
            secret = text[start:end]
            if not secret.replace(MARK, "").strip(" \"'"):
                continue                      # nothing left to remove: counts nothing
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

    def redact_value(self, value: Any, counts: Counter | None = None) -> Any:
        """Redact strings inside JSON-like data; values under secret-named keys go entirely, and a value
        whose key says whose it is (or is key-like) goes when it has that shape (or high entropy)."""
        if isinstance(value, str):
            return self.redact_text(value, counts)
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                clean_key = self.redact_text(key, counts) if isinstance(key, str) else key
                if isinstance(key, str) and self._secret_item(key, item):
                    out[clean_key] = MARK  # whatever its shape: {"password": ["x"]} is a secret too
                    if counts is not None:
                        counts["secret_field"] += 1
                else:
                    out[clean_key] = self.redact_value(item, counts)
            return out
        if isinstance(value, (list, tuple)):
            if value and all(isinstance(item, str) for item in value):
                return self._redact_argv(list(value), counts)
            return [self.redact_value(item, counts) for item in value]
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
