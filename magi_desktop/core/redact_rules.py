"""The redaction rules (:mod:`.redact`): the rule record, the keyed-value grammar (a name, an operator and a
value in the forms many languages write them), the judges that decide a match, and :data:`RULES` itself."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import redact_vendors as vendors
from .redact_entropy import MIN_CHARS
from .redact_harmless import harmless
from .redact_names import AUTH_SCHEMES, PASSWORD_STATES, is_secret_name

if TYPE_CHECKING:
    from .redact import RuleSet

@dataclass(frozen=True)
class Rule:
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
    return Rule(kind, re.compile(pattern, flags), tuple(any_of), tuple(all_of), judge=judge, keyed=keyed,
                 min_chars=min_chars)


def _vendor(kind, pattern, any_of, judge=None):
    """A vendor key format: one long, case-sensitive token with a known prefix or shape."""
    regex = re.compile(pattern)
    return Rule(kind, regex, tuple(any_of), token=True, judge=judge, min_chars=_min_width(regex))


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
def value_of(match: re.Match) -> tuple[str | None, str]:
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
    quoted = value_of(match)[0] in ("dq", "sq", "bq")
    if op == "," and not (quoted and "nq" in groups and match.group("nq")):
        return None                         # "password, username": a list in prose; only "NAME", "v" counts
    if op in ("!=", "!==") and not quoted:
        return None                         # a comparison with a variable, not a literal
    if op == "==" and match.group("op") == "==" and not quoted:
        value = "=" + value                 # "KEY==abc": an assignment of "=abc", not a comparison
    if op == ":" and not quoted and match.group("op") == ":" and _COORDINATE.match(value):
        return None                         # org.slf4j.slf4j-api:jar:1.7.8, io.jsonwebtoken:jjwt-jackson-0.11.2
    group, _ = value_of(match)
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
    if value.lower() in PASSWORD_STATES or harmless(name, value):
        return None
    if name.lower() not in ("pin code", "pw") and not is_secret_name(name):
        return None                         # "password_min_length is 12", "passwordless is on"
    group, _ = value_of(match)
    if (match.group("colon") and group == "bare" and value.isalpha()
            and re.match(r"[ \t]+[A-Za-z]", match.string[match.end(group):])):
        return None
    return "spoken_password"


def _judge_spoken(match: re.Match, value: str, rules: RuleSet) -> str | None:
    """"the api token is X": only a family's shape or a high-entropy token ("the secret is out" is prose)."""
    return rules.judge_pair(match.group("name"), value, op="is", plain=False)


_KEYED = dict(flags=re.IGNORECASE, judge=_judge_keyed, keyed=True)
# Without a secret word, a keyed value is a secret only as a vendor's shape or a high-entropy token.
KEYED_MIN_CHARS = min(MIN_CHARS, *(_min_width(re.compile(shape)) for _, _, shape in vendors.KEYED))


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
    quote = _QUOTE_OF.get(value_of(match)[0])
    return rules.judge_pair(match.group("name"), value, op=" ", quote=quote)


def _judge_vault_legacy(match: re.Match, value: str, rules: RuleSet) -> str | None:
    """``s.`` and 24 letters and digits is also code (``s.AcceptanceTimeoutSeconds``): a token has a digit."""
    return "vault" if any(c.isdigit() for c in value[2:]) else None


# ------------------------------------------------------------------ the rules


RULES: tuple[Rule, ...] = (
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
          judge=lambda m, value, rules: None if harmless("", value) else "url_param"),
    # Authorization: Bearer x / Api-Token x / SSWS x / x — any one scheme word, then the credential.
    _rule("auth_header",
          r"\b(?:proxy-)?authorization[\"']?\s*[:=][\"'\s]*(?:[A-Za-z][\w\-]{1,20}[ \t]+)?"
          r"(?P<secret>[A-Za-z0-9\-._~+/=:@]{6,})", ["authorization"],
          judge=lambda m, value, rules: None if value.lower() in AUTH_SCHEMES else "auth_header"),
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
          judge=_judge_spoken, min_chars=KEYED_MIN_CHARS),
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
    return (harmless("", plain) or plain.startswith(("$", "{{", "[", "<")) or user.startswith("<")
            or (user.isdigit() and plain.isdigit()) or plain.lower() in _CURL_PLACEHOLDERS
            or (plain == user and len(plain) <= 8))


