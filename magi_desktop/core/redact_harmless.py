"""Values that are not secrets although they stand where one would (for :mod:`magi_desktop.core.redact`).

A rule finds a value where a secret would be — after ``password=``, as a ``ghp_`` token — and these tell
the ones to keep: a reference to where the secret lives (``$DB_PASSWORD``, ``var.db_password``,
``{{ .Values.Password }}``, ``os.getenv("TOKEN")``), a placeholder (``xxxxxxxx``, ``ghp_XXXX…``,
``<your token>``, ``sha256~PUT_YOUR_TOKEN_HERE``), a flag (``PuttyPassword=0``), and tokens that are words
or version strings (``APIOrganizationExist``, ``rc0.15.0_20231217_1420-SNAPSHOT``). Each test is narrow:
a real secret that looks like one of these is the cost, so none of them takes a mixed random token.
"""

from __future__ import annotations

import re
from collections import Counter

MARK = "[REDACTED]"

# true/false/null, [REDACTED], <your token>, {{ x }}, ${{ secrets.X }}, ${x.y}, {name}, %VAR%, xxx, ***, …,
# ENC[AES256_GCM,…] (a value SOPS encrypted)
_PLACEHOLDER_VALUE = re.compile(
    r"^[\"'`]?(?:true|false|null|nil|none|undefined|yes|no|on|off|enabled|disabled|\[REDACTED\]|<[^<>]*>"
    r"|\{\{.*\}\}|\$\{\{.*\}\}|\$\{[^{}]*\}|\{[A-Za-z_]*\}|\$\(.*|%\w+%|x{3,}|\*{3,}|\.{3}|…|ENC\[.*)?[\"'`]?$",
    re.IGNORECASE)
# $DB_PASSWORD, $dbPassword, $PASS1, $AWS_S3_KEY, $1 — a variable's name, not a random string ($up3rZq7…).
_VARIABLE = re.compile(r"^\$(?:\d|[A-Za-z]+\d*(?:_[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*|_\d*)*)$")
_CONSTANT_NAME = re.compile(r"^[A-Z]+(?:_[A-Z]+)+$")
# A version, also as a pin (google-auth==2.29.0 reads as the value "=2.29.0").
_VERSION = re.compile(r"^[=~^<>]{0,2}v?\d+(?:\.\d+){1,3}(?:[-+][\w.]+)?$")
# A reference to the value in code or configuration: var.db_password, self.token, process.env.TOKEN,
# .Values.password, os.environ["X"], getPassword(), new AWS.Credentials(…).
_REFERENCE = re.compile(
    r"^(?:(?:var|local|data|module|each|self|this|process|os|config|settings|env|secrets|vars|inputs|params|props"
    r"|args|ctx|context|request|req|options|opts|values|\.values)\.[\w.\[\]\"']+"
    r"|[A-Za-z_$][\w$.]*\(.*|new|await|function|lambda|require)$", re.IGNORECASE)
# Numbers are harmless only after names that count tokens ("max_tokens=512");
# after any other secret name a number may be the secret (PGPASSWORD=123456).
_COUNT_NAME = re.compile(r"tokens\b|tokens?[_-]?(?:count|limit|used|budget)|max[_-]?tokens?", re.IGNORECASE)
_NUMBER = re.compile(r"^[\"']?\d{1,9}[\"']?$")
_PLACEHOLDER_WORDS = re.compile(r"your[_\-]?(?:api[_\-]?)?(?:token|key|secret|password)|_here(?![a-z])|replace[_\-]?me"
                                r"|placeholder|redacted", re.IGNORECASE)


def harmless(name: str, value: str, quote: str | None = None) -> bool:
    """``value`` after ``name`` is not a secret: a placeholder, a variable, a reference, a flag, a count.
    ``quote`` is the quote the value stood in (``'`` makes ``$x`` literal, as in a shell)."""
    if _PLACEHOLDER_VALUE.match(value) or (_NUMBER.match(value) and _COUNT_NAME.search(name)):
        return True
    plain = value.strip("\"'`")
    if len(plain) == 1:
        return True                                  # PuttyPassword=0, a flag, not a password
    if _CONSTANT_NAME.match(plain) or _VERSION.match(plain):
        return True                                  # ACCESS_TOKEN, CHANGE_ME: a name for it; 2.29.0: a version
    if plain.startswith("$") and quote != "'" and _VARIABLE.match(plain):
        return True
    if quote == "`" and any(c.isspace() for c in plain):
        return True                                  # `etcdctl get /secret`: a command's output
    return quote is None and _REFERENCE.match(plain) is not None


def placeholder(secret: str) -> bool:
    """A token that only stands for one: a filler repeated (``ghp_xxxx…``, ``AKIAXXXX…``, ``0000…``),
    or the words of an instruction (``PUT_YOUR_TOKEN_HERE``)."""
    if len(secret) < 8:
        return False
    counts = Counter(c for c in secret if c.isalnum() or c in "*#")
    total = sum(counts.values())
    if total:
        char, most = counts.most_common(1)[0]
        if char in _FILLERS and most * 2 > total:
            return True
    if _PLACEHOLDER_WORDS.search(secret):
        return True
    if len(secret) < 16:
        return False                                 # 11111111, 12345678: weak passwords, still passwords
    # glc_1111…, sgp_5555555dAAAAA7777777CcccC…: a long token typed, not drawn
    return sum(len(m.group()) for m in _REPEATED.finditer(secret)) * 2 >= len(secret)


# A unit of one to four digits or lower-case letters four times or more (1111, abab…): covering half a token
# of 16+ characters it is a typed filler; a drawn token has a run of four at a place ~1 in 16³ (hex) or
# rarer. Not capitals: an upper-case encoding's zero is a real key (age's AGE-SECRET-KEY-1QQQ…).
_REPEATED = re.compile(r"([a-z0-9]{1,4}?)\1{3,}")
# The characters a placeholder repeats; a key may repeat others (the zero key of age is all Q).
_FILLERS = frozenset("xX*#0a")
_PIECES = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def wordlike(token: str, share: float = 0.6, numbers: bool = True, capitals: bool = True) -> bool:
    """``token`` is made of words (and, with ``numbers``, numbers): ``APIOrganizationExist``,
    ``rc0.15.0_20231217_1420-SNAPSHOT``, ``cmp2-qat-1208358310``. Pieces of 3+ letters (split at case
    changes; with ``capitals`` also runs of capitals), or of 3+ digits, cover ``share`` of its letters and
    digits, and a quarter of the letters are vowels (a, e, i, o, u: ~19% of random letters, ~35% of English
    ones). A random key's pieces are a letter or two long."""
    alnum = sum(c.isalnum() for c in token)
    if not alnum:
        return False
    covered = sum(len(p) for p in _PIECES.findall(token)
                  if len(p) >= 3 and ((p.isalpha() and (capitals or not p.isupper())) or (numbers and p.isdigit())))
    if covered < share * alnum:
        return False
    letters = [c for c in token.lower() if c.isalpha()]
    return not letters or sum(c in "aeiou" for c in letters) * 4 >= len(letters)
