"""Samples of the secrets a gitleaks configuration describes, for benchmarks/secret_leaks.py.

    samples(Path("gitleaks.toml"), per_rule=4) -> list[RuleSample]

gitleaks' regexes are Go RE2 syntax; :func:`python_regex` rewrites the few constructs Python's ``re``
reads differently (a ``(?i)`` in the middle of a pattern scopes to the rest of its group; POSIX classes;
``\\z``). Samples are drawn with Hypothesis' ``from_regex`` (full matches, printable ASCII, derandomised so
a run is repeatable), the secret is the rule's secret group of the drawn match, and a sample is kept only
when gitleaks itself would report it: its keywords occur and the secret reaches the rule's entropy. The
configuration is the user's own checkout; nothing of it is stored in this repository.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magi_desktop.core.redact_harmless import placeholder

_POSIX = {"[:alnum:]": "a-zA-Z0-9", "[:alpha:]": "a-zA-Z", "[:digit:]": "0-9", "[:upper:]": "A-Z",
          "[:lower:]": "a-z", "[:space:]": r"\s", "[:xdigit:]": "0-9a-fA-F", "[:word:]": r"\w"}
_ALPHABET = st.characters(min_codepoint=32, max_codepoint=126) | st.sampled_from("\t\n")


class RuleSample(NamedTuple):
    rule: str
    keyword: str       # the rule's first keyword (gitleaks' sample form names the secret with it)
    match: str         # the drawn full match: the secret in the context the rule asks for
    secret: str


def python_regex(pattern: str) -> str:
    """A Go RE2 pattern as Python reads it."""
    for posix, chars in _POSIX.items():
        pattern = pattern.replace(posix, chars)
    pattern = pattern.replace(r"\z", r"\Z")
    out: list[str] = []
    open_scopes: list[int] = [0]       # per open group: how many "(?i:" scopes to close at its end
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "]":
                out.append("[]")
                i += 2
                continue
        elif pattern.startswith("(?i)", i) and i > 0:
            out.append("(?i:")
            open_scopes[-1] += 1
            i += 4
            continue
        elif c == "(":
            open_scopes.append(0)
        elif c == ")":
            out.append(")" * open_scopes.pop())
        elif c == "|" and open_scopes[-1]:
            out.append(")" * open_scopes[-1])   # an alternative ends the scope; the next starts without it
            open_scopes[-1] = 0
        out.append(c)
        i += 1
    out.append(")" * open_scopes.pop())
    return "".join(out)


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values()) if text else 0.0


def _secret(match: re.Match, group: int | None) -> str:
    if group:
        return match.group(group) or ""
    for value in match.groups():
        if value:
            return value
    return match.group(0)


def _draw(regex: re.Pattern, count: int) -> list[str]:
    drawn: list[str] = []

    @settings(max_examples=count * 8, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.from_regex(regex, fullmatch=True, alphabet=_ALPHABET))
    def collect(text):
        drawn.append(text)

    collect()
    return drawn


def samples(config: Path, per_rule: int = 4) -> tuple[list[RuleSample], dict[str, str]]:
    """Samples of every rule with a regex; and the rules that could not be sampled, with why."""
    rules = tomllib.loads(config.read_text(encoding="utf-8")).get("rules", [])
    out: list[RuleSample] = []
    skipped: dict[str, str] = {}
    for rule in rules:
        rule_id, pattern = rule.get("id", "?"), rule.get("regex")
        if not pattern:
            skipped[rule_id] = "no regex (a path rule)"
            continue
        try:
            regex = re.compile(python_regex(pattern))
            drawn = _draw(regex, per_rule)
        except Exception as exc:  # noqa: BLE001 - one rule Python cannot read must not stop the others
            skipped[rule_id] = f"{type(exc).__name__}: {str(exc)[:80]}"
            continue
        keywords = [k.lower() for k in rule.get("keywords", [])]
        kept: list[RuleSample] = []
        seen: set[str] = set()
        for text in drawn:
            match = regex.search(text)
            if not match:
                continue
            secret = _secret(match, rule.get("secretGroup")).strip()
            # A typed filler (000…, Hypothesis' simplest example of [a-z0-9]{32}) is no secret: the rules
            # keep those on purpose (redact_harmless.placeholder), so it is not drawn as one.
            if (not secret or secret in seen or (keywords and not any(k in text.lower() for k in keywords))
                    or _entropy(secret) < float(rule.get("entropy", 0) or 0) or placeholder(secret)):
                continue
            seen.add(secret)
            kept.append(RuleSample(rule_id, keywords[0] if keywords else rule_id.split("-")[0], text, secret))
            if len(kept) == per_rule:
                break
        if kept:
            out += kept
        else:
            skipped[rule_id] = "no sample passed its keywords and entropy"
    return out, skipped
