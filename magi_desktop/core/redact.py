"""Secret redaction, applied to every payload before anything is stored or indexed.

Each rule is a regex plus the cheap substrings that must occur for it to
match at all: a lower-cased substring test costs a fraction of a microsecond,
while a regex scan of a sentence costs tens, so most texts are never scanned.
A rule's replacement keeps the non-secret part of the match (the flag name,
the URL's user and host, the variable name) so the memory still says *what*
happened — "ran mysql with a password" — without the secret. Redaction is
deterministic, so a replayed payload still dedupes to the same event.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

MARK = "[REDACTED]"

# Names whose value is a secret, in env vars, config files, JSON and CLI flags.
_SECRET_WORDS = (
    r"(?:password|passwd|passphrase|pwd|secret|token|tokens|api[_-]?key|apikey|access[_-]?key|"
    r"secret[_-]?key|private[_-]?key|auth[_-]?key|account[_-]?key|sharedaccesskey|credentials?|"
    r"client[_-]?secret|session[_-]?key|authorization|cookie|"
    # short words only as a whole word or after a separator: db_pass, auth — not bypass, author
    r"(?<![A-Za-z0-9])(?:pass|auth))"
)
# The prefix is bounded: an unbounded one made "a.a.a.…" quadratic (minutes for 64k characters).
_SECRET_NAME = r"[A-Za-z0-9_.\-]{0,40}?" + _SECRET_WORDS
# A value: quoted, or up to the next space ("Tr0ub4dor&3" is one password).
_VALUE = r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"}<>]+)"
_NAME_WORDS = ("pass", "pwd", "secret", "token", "key", "credential", "auth", "cookie")
_SESSION_KEY_WORDS = ("session_key", "session-key", "sessionkey")
_AWS_PREFIXES = ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa")


@dataclass(frozen=True)
class _Rule:
    kind: str
    regex: re.Pattern
    any_of: tuple[str, ...]          # at least one must occur (lower-cased text)
    all_of: tuple[str, ...] = ()     # and all of these
    keeps_head: bool = False         # the match has groups "head" and "secret"
    token: bool = False              # the secret is one long token (vendor key formats)


def _rule(kind, pattern, any_of, all_of=(), flags=re.IGNORECASE):
    """A contextual rule: a name or command around the secret ("password=", "mysql -p")."""
    regex = re.compile(pattern, flags)
    return _Rule(kind, regex, tuple(any_of), tuple(all_of), keeps_head="head" in regex.groupindex)


def _vendor(kind, pattern, any_of):
    """A vendor key format: one long, case-sensitive token with a known prefix."""
    return _Rule(kind, re.compile(pattern), tuple(any_of), token=True)


RULES: tuple[_Rule, ...] = (
    _rule("private_key",
          r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
          r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", ["private key"], flags=0),  # case-sensitive
    # scheme://user:password@host — keep the user and host.
    _rule("url_credentials",
          r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.\-]{0,30}://[^\s:/@]{0,256}:)(?P<secret>[^\s@/]{1,512})(?=@)",
          ["@"], ["://"]),
    # https://<token>@github.com — a token as the whole user-info
    _rule("url_token_user", r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.\-]{0,30}://)(?P<secret>[A-Za-z0-9_\-]{20,256})(?=@)",
          ["@"], ["://"]),
    _rule("url_param",
          r"(?P<head>[?&;#](?:access_token|refresh_token|id_token|token|auth|api_key|apikey|api-key|key|"
          r"secret|client_secret|password|passwd|pwd|sig|signature|x-amz-signature|x-amz-credential|"
          r"x-amz-security-token|code|session|sessionid|sid)=)(?P<secret>[^&#\s]+)",
          ["token=", "auth=", "key=", "secret=", "password=", "passwd=", "pwd=", "sig=", "signature=",
           "credential=", "code=", "session=", "sessionid=", "sid="]),
    _rule("auth_header",
          r"(?P<head>\b(?:authorization|proxy-authorization|x-api-key|api-key|x-auth-token)[\"']?\s*[:=][\"'\s]*"
          r"(?:(?:bearer|basic|token|digest|apikey)\s+)?)(?P<secret>[A-Za-z0-9\-._~+/=:]{6,})",
          ["authorization", "api-key", "x-auth-token"]),
    _rule("bearer", r"(?P<head>\bbearer\s+)(?P<secret>[A-Za-z0-9\-._~+/]{8,}=*)", ["bearer"]),
    _vendor("jwt", r"\beyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}", ["eyj"]),
    _vendor("aws_access_key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b", _AWS_PREFIXES),
    _rule("aws_cli_secret",
          r"(?P<head>\b(?:aws_secret_access_key|aws_session_token|secret_access_key)\s+)(?P<secret>[^\s=:]\S*)",
          ["secret_access_key", "aws_session_token"]),
    _vendor("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})\b",
            ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"]),
    _vendor("gitlab_token", r"\bglpat-[A-Za-z0-9_\-]{20,}", ["glpat-"]),
    _vendor("openai_key", r"\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", ["sk-"]),
    _vendor("stripe_key", r"\b(?:sk|rk|pk|whsec)_(?:live|test)_[A-Za-z0-9]{16,}\b", ["_live_", "_test_"]),
    _vendor("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+",
            ["xox", "hooks.slack.com"]),
    _vendor("google_key", r"\bAIza[0-9A-Za-z_\-]{35}\b|\bya29\.[0-9A-Za-z_\-]{20,}", ["aiza", "ya29."]),
    _vendor("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", ["npm_"]),
    _vendor("pypi_token", r"\bpypi-[A-Za-z0-9_\-]{50,}", ["pypi-"]),
    _vendor("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}\b", ["hf_"]),
    _vendor("sendgrid_key", r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", ["sg."]),
    _vendor("twilio_key", r"\bSK[0-9a-f]{32}\b", ["sk"]),
    _vendor("telegram_bot_token", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{30,40}\b", [":aa"]),
    _vendor("digitalocean_token", r"\bdo[opr]_v1_[a-f0-9]{64}\b", ["_v1_"]),
    _vendor("shopify_token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", ["shpat_", "shpca_", "shppa_", "shpss_"]),
    _vendor("alibaba_key", r"\bLTAI[A-Za-z0-9]{12,20}\b", ["ltai"]),
    _vendor("mailgun_key", r"\bkey-[0-9a-zA-Z]{32}\b", ["key-"]),
    # mysql -pSECRET / sshpass -p SECRET / curl -u user:SECRET
    _rule("mysql_password",
          r"(?P<head>\b(?:mysql|mysqldump|mariadb|mysqladmin)\b[^\n|;&]{0,200}?\s-p)(?P<secret>[^\s\-][^\s]*)",
          ["mysql", "mariadb"], ["-p"]),
    _rule("sshpass", r"(?P<head>\bsshpass\s+-p\s*)(?P<secret>\S+)", ["sshpass"]),
    _rule("login_password",
          r"(?P<head>\b(?:docker|podman|nerdctl|buildah)\s+login\b[^\n|;&]{0,200}?\s-p\s+)(?P<secret>\S+)",
          ["login"], ["-p"]),
    _rule("redis_password", r"(?P<head>\bredis-cli\b[^\n|;&]{0,200}?\s(?:-a|--pass)\s+)(?P<secret>\S+)",
          ["redis-cli"]),
    _rule("smb_password", r"(?P<head>\s(?:-U|--user)[\s=]+[^\s%]+%)(?P<secret>\S+)", ["-u", "--user"], ["%"]),
    # A cookie header is name=value pairs; "cookie: chocolate chip" is not one.
    _rule("cookie_header", r"(?P<head>\b(?:set-)?cookie\s*:\s*)(?P<secret>[^\n=]{1,200}=[^\n]{0,4000})", ["cookie"]),
    _rule("curl_user", r"(?P<head>(?:\s-u|\s--user)[\s=]+[\"']?[^\s:\"']+:)(?P<secret>[^\s\"']+)",
          ["-u", "--user"], [":"]),
    # --password=x / --token x / -password x
    _rule("cli_flag",
          r"(?P<head>(?<![\w-])--?(?:password|passwd|pass|pwd|passphrase|token|auth-token|access-token|"
          r"api-key|apikey|api_key|secret|client-secret|private-key|key-password|storepass|keypass|srcstorepass|"
          r"deststorepass|srckeypass|destkeypass)(?:=|\s+))(?P<secret>" + _VALUE + ")",
          _NAME_WORDS, ["-"]),
    # NAME=value, NAME: value, "name": "value"
    _rule("assignment",
          r"(?P<head>(?<![\w-])[\"']?" + _SECRET_NAME + r"[\"']?\s*[:=]\s*)(?P<secret>" + _VALUE + ")",
          _NAME_WORDS + _SESSION_KEY_WORDS),
    # "my passphrase is correct horse battery staple": the rest of the sentence
    _rule("spoken_passphrase", r"(?P<head>\bpassphrase\s+(?:is|was)\s+)(?P<secret>[^.\n;。]{1,200})", ["passphrase"]),
    # "my password is hunter2", "密码是 abc123", "密码123456"
    _rule("spoken_password",
          r"(?P<head>\b(?:password|passcode|pin code)\s+(?:is|was)\s+"
          r"|(?:密码|口令|密钥)\s*(?:是|为|：|:)\s*"
          r"|(?:密码|口令|密钥)\s*(?=[!-~]{4,}))"  # "密码 abc123" / "密码abc123": an ASCII token right after
          r"(?P<secret>[^\s，。,;；]+)",
          ["password", "passcode", "pin code", "密码", "口令", "密钥"]),
)

_SECRET_KEY = re.compile(r"^" + _SECRET_NAME + r"$", re.IGNORECASE)
# Values that are clearly not secrets even after a secret-looking name
# ("token: null", "password=$DB_PASSWORD", "password=[REDACTED]").
_HARMLESS_VALUE = re.compile(r"^[\"']?(?:true|false|null|none|\$\{?\w+\}?|\[REDACTED\])?[\"']?$", re.IGNORECASE)
# Numbers are harmless only after names that count tokens ("max_tokens=512");
# after any other secret name a number may be the secret (PGPASSWORD=123456).
_COUNT_NAME = re.compile(r"tokens\b|tokens?[_-]?(?:count|limit|used|budget)|max[_-]?tokens?", re.IGNORECASE)
_NUMBER = re.compile(r"^[\"']?\d{1,9}[\"']?$")


def _harmless(name: str, value: str) -> bool:
    return bool(_HARMLESS_VALUE.match(value) or (_NUMBER.match(value) and _COUNT_NAME.search(name)))


# Bare words that are also ordinary English: after "secret:" or "key:" a short
# plain word is prose ("My secret: I love jazz"), not a credential.
_PROSE_NAMES = frozenset({"secret", "key", "auth", "cookie", "pass", "token", "session"})


def _prose(head: str, value: str) -> bool:
    """"secret: I…" reads as a sentence: a bare ordinary word, a colon, a short plain word."""
    stripped = head.strip()
    if not stripped.endswith(":"):
        return False
    name = stripped[:-1].strip().strip("\"'").lower()
    return name in _PROSE_NAMES and value.isalpha() and len(value) < 12
_CHECKS_VALUE = frozenset({"assignment", "cli_flag"})


def _replacer(rule: _Rule, counts: Counter | None, found: list[str] | None):
    def replace(match: re.Match) -> str:
        if rule.keeps_head:
            head, secret = match.group("head"), match.group("secret")
            if rule.kind in _CHECKS_VALUE and (_harmless(head, secret) or _prose(head, secret)):
                return match.group(0)
            replacement = match.group("head") + MARK
        else:
            secret, replacement = match.group(0), MARK
        if counts is not None:
            counts[rule.kind] += 1
        if found is not None:
            found.append(secret)
        return replacement

    return replace


# One scan for every rule's trigger substrings decides which rules can match.
# Deciding that a text needs no redaction must be cheap, since almost none
# does: one scan for the context words of the contextual rules ("password",
# "bearer", "@" in a URL…) and one for a long token, which every vendor key
# format is. Only texts that pass test each rule's triggers exactly.
_TRIGGERS = tuple(sorted({t for rule in RULES for t in rule.any_of}))
_CONTEXT_WORDS = {t for rule in RULES if not rule.token for t in rule.any_of}
# "pass" already finds "password": scan only for words that contain no other.
_CONTEXT_SCAN = re.compile("|".join(
    re.escape(word) for word in sorted(_CONTEXT_WORDS)
    if not any(other != word and other in word for other in _CONTEXT_WORDS)
))
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_\-]{16,}")


def may_need_redaction(text: str) -> bool:
    """False when no rule could match ``text``."""
    return _CONTEXT_SCAN.search(text.lower()) is not None or _LONG_TOKEN.search(text) is not None


def redact_text(text: str, counts: Counter | None = None, found: list[str] | None = None) -> str:
    """Return ``text`` with secrets replaced by ``[REDACTED]``; tally kinds in ``counts``, and append the
    secrets removed to ``found``."""
    if not text:
        return text
    if not may_need_redaction(text):
        return text
    lowered = text.lower()
    present = {t for t in _TRIGGERS if t in lowered}
    for rule in RULES:
        if not present.isdisjoint(rule.any_of) and all(s in lowered for s in rule.all_of):
            redacted = rule.regex.sub(_replacer(rule, counts, found), text)
            if redacted is not text and redacted != text:
                text = redacted
                lowered = text.lower()
    return text


# A secret found in context ("my password is hunter22") is also removed where it stands alone ("hunter22")
# in text derived from it; shorter ones would blank ordinary words and numbers.
MIN_SCRUB_CHARS = 4


def redact_with(text: str, context: str) -> str:
    """``text`` redacted, and without the secrets redaction finds in ``context`` (the message it was taken
    from): a quote or a summary of "my password is hunter22" may hold "hunter22" without the words that
    mark it as a secret."""
    found: list[str] = []
    redact_text(context, found=found)
    text = redact_text(text)
    for secret in sorted({s.strip("\"'") for s in found}, key=len, reverse=True):
        if len(secret) >= MIN_SCRUB_CHARS:
            text = text.replace(secret, MARK)
    return text


def _is_secret_key(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in _NAME_WORDS + _SESSION_KEY_WORDS) and bool(_SECRET_KEY.match(key))



def redact_value(value: Any, counts: Counter | None = None) -> Any:
    """Redact strings inside JSON-like data; values under secret-named keys go entirely."""
    if isinstance(value, str):
        return redact_text(value, counts)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            clean_key = redact_text(key, counts) if isinstance(key, str) else key
            if isinstance(key, str) and _is_secret_key(key) and item is not None and not isinstance(item, bool) \
                    and not (isinstance(item, (str, int, float)) and _harmless(key, str(item))):
                out[clean_key] = MARK  # whatever its shape: {"password": ["x"]} is a secret too
                if counts is not None:
                    counts["secret_field"] += 1
            else:
                out[clean_key] = redact_value(item, counts)
        return out
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(item, str) for item in value):
            return _redact_argv(list(value), counts)
        return [redact_value(item, counts) for item in value]
    return value


def _redact_argv(items: list[str], counts: Counter | None) -> list[str]:
    """A list of strings, read as one command line: ["mysql", "-pSECRET"] is redacted in context."""
    if len(items) == 2 and _is_secret_key(items[0]) and not _harmless(items[0], items[1]):
        if counts is not None:
            counts["secret_field"] += 1
        return [items[0], MARK]  # a (name, value) pair: ["Authorization", "Basic …"]
    joined = " ".join(items)
    redacted = redact_text(joined, counts)
    if redacted == joined:
        return items
    words = redacted.split(" ")
    # Same number of words: each item keeps its place. Otherwise (an item had
    # spaces, or a whole span was blanked) keep the redacted line as one item.
    return words if len(words) == len(items) else [redacted]
