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
from typing import Any

from . import redact_vendors as vendors
from .redact_entropy import ENTROPY_PARAMETERS, high_entropy
from .redact_gate import TriggerIndex
from .redact_harmless import MARK, harmless, placeholder, wordlike
from .redact_names import (
    AUTH_SCHEMES,
    KEY_LIKE,
    NAME_WORDS,
    SECRET_WORD_SCAN,
    SESSION_KEY_WORDS,
    TYPE_WORDS,
    is_secret_name,
    key_like,
    names_family,
    prose_value,
)
from .redact_rules import KEYED_MIN_CHARS, RULES, Rule, value_of

#: Bumped when the code that decides (not only the patterns) changes what is redacted.
ENGINE_REVISION = 3

# ------------------------------------------------------------------ the rule set


class RuleSet:
    """One version of the redaction rules: the rules, the vendor families their keyed values know, and
    whether key-like names take high-entropy values. :attr:`version` names it (a hash of all that), so the
    memory can tell what it stored under older rules."""

    def __init__(self, rules: tuple[Rule, ...] = RULES,
                 families: tuple[tuple[str, tuple[str, ...], str], ...] = vendors.KEYED, entropy: bool = True):
        self.rules = rules
        self.families = tuple((kind, words, re.compile(shape, re.IGNORECASE)) for kind, words, shape in families)
        # Which families a name may name, found with one scan (judge_pair runs for every name = value).
        self._family_index = TriggerIndex([words for _, words, _ in families])
        self.entropy = entropy
        self._family_rows = families
        keyed_words = {w for _, words, _ in families for w in words} | set(KEY_LIKE) | set(NAME_WORDS)
        # A rule without triggers of its own (the keyed ones) runs when any key-like word occurs.
        triggers = [rule.any_of or tuple(sorted(keyed_words)) for rule in rules]
        self._index = TriggerIndex(triggers)
        # The cheap first look (see rules_for): a rule that can take a short value has a word of these in
        # its triggers (a context rule) or needs a name that says it holds a secret (a keyed rule: that
        # name holds one of NAME_WORDS); every other rule needs a run of at least _min_run characters.
        short = {t for r in rules if not (r.token or r.keyed or r.min_chars) for t in r.any_of if t}
        short |= set(NAME_WORDS) | set(SESSION_KEY_WORDS)
        self._anchors = tuple(sorted(w for w in short if not any(o != w and o in w for o in short)))
        self._min_run = min([KEYED_MIN_CHARS] + [r.min_chars for r in rules if r.min_chars])
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
        if not value or harmless(name, value, quote) or value.lower() in AUTH_SCHEMES:
            return None
        words = name.split()
        while len(words) > 1 and words[-1].lower() in TYPE_WORDS:
            words.pop()
        name = " ".join(words)
        if plain and is_secret_name(name):
            return None if prose_value(name, op, value) else "assignment"
        lowered = name.lower()
        vendor = None
        for position in self._family_index.candidates(lowered):
            kind, family_words, shape = self.families[position]
            if names_family(name, family_words):
                if shape.fullmatch(value):
                    return kind
                vendor = vendor or kind
        if vendor and self.entropy and high_entropy(value):
            return vendor                   # "ARTIFACTORY=<a long random token>": that vendor's, whatever the length
        if self.entropy and (key_like(name) or (not plain and is_secret_name(name))) and high_entropy(value):
            return "high_entropy"
        return None

    # -------------------------------------------------------------- redacting

    def rules_for(self, text: str) -> tuple[Rule, ...]:
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
                    strong = SECRET_WORD_SCAN.search(lowered) is not None
                need = need if strong else max(need, KEYED_MIN_CHARS)
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
                    rules: tuple[Rule, ...] | None = None) -> str:
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

    def _apply(self, rule: Rule, text: str, counts: Counter | None, found: list[str] | None) -> str:
        edits: list[tuple[int, int, str]] = []
        covered = -1
        for match in rule.regex.finditer(text):
            group, _ = value_of(match)
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

    def redact_value(self, value: Any, counts: Counter | None = None, rules: tuple[Rule, ...] | None = None) -> Any:
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
        if isinstance(item, (str, int, float)) and harmless(key, str(item)):
            return False
        if is_secret_name(key):
            return True
        return isinstance(item, str) and self.judge_pair(key, item, plain=False) is not None

    def _redact_argv(self, items: list[str], counts: Counter | None) -> list[str]:
        """A list of strings, read as one command line: ["mysql", "-pSECRET"] is redacted in context."""
        if len(items) == 2 and is_secret_name(items[0]) and not harmless(items[0], items[1]):
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
