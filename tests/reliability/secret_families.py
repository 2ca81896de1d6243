"""The committed secret-family corpus (tests/fixtures/secrets) and the forms its secrets are written in.

A *keyworded* text puts the secret beside a word that names it, in one of the assignment forms of config
files and programming languages (gitleaks' sample forms, extended with shell, PowerShell, XML attributes
and prose); a *bare* text has the secret alone in a sentence. The unit test asks for no keyworded leak;
the bare rate is measured (benchmarks/secret_leaks.py), since a bare 32-hex-digit key cannot be told from a
hash.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "secrets"


class Sample(NamedTuple):
    family: str
    rule: str
    keyword: str
    secret: str


def load_corpus() -> list[Sample]:
    with open(FIXTURES / "corpus.jsonl", encoding="utf-8") as handle:
        return [Sample(**json.loads(line)) for line in handle if line.strip()]


def load_benign() -> list[str]:
    """Strings that hold no secret but look like one to a careless rule (one per line; ``\\n`` is a newline)."""
    lines = (FIXTURES / "benign.txt").read_text(encoding="utf-8").splitlines()
    return [line.replace("\\n", "\n") for line in lines if line.strip() and not line.startswith("#")]


# {i}: the keyword, {I}: upper-cased, {s}: the secret.
KEYWORDED_FORMS: tuple[str, ...] = (
    '{i}Token="{s}"', "{i}Token = {s}", '{{\n    "{i}_token": "{s}"\n}}',
    '{{"config.ini": "{I}_TOKEN={s}\\nDEBUG=true"}}',
    "<{i}Token>\n    {s}\n</{i}Token>", "<{i}Token>{s}</{i}Token>", "{i}_token: {s}", "{i}_token: '{s}'",
    'string {i}Token = "{s}";', 'var {i}Token string = "{s}"', '{i}Token := "{s}"', "{i}Token := `{s}`",
    'var {i}Token: String = "{s}"', '${i}Token .= "{s}"', "{i}Token = '{s}'", 'System.setProperty("{I}_TOKEN", "{s}")',
    '  "{i}Token" => "{s}"', '{I}_TOKEN ::= "{s}"', '{I}_TOKEN ?= "{s}"', "export {I}_API_KEY={s}",
    "{i}_secret = {s}", "{I}_PASSWORD='{s}'", "-{i}Secret '{s}'", "--{i}-token {s}",
    '<add key="{i}ApiKey" value="{s}" />',
    "{i}_client_id = {s}", "{i}.key={s}", "my {i} api key is {s}",
    # the second pass (issue 16): a suffix after the keyword, space-separated settings, the next line, a
    # fullwidth colon, an arrow, aligned operators
    "{I}_TOKEN2={s}", "{i}_token_prod: {s}", "set -gx {I}_TOKEN {s}", "git config --global {i}.token {s}",
    "{i}_token:\n  {s}", "{i}_token：{s}", "{i}_token → {s}", "{i}_token       = \"{s}\"",
)
BARE_FORMS: tuple[str, ...] = ("{s}", "saw {s} in the build log", "Rotate {s} before Friday")


def keyworded(sample: Sample) -> list[str]:
    """``sample``'s secret in every keyworded form (a URL-shaped secret also as it is: its scheme and
    host are its context)."""
    kw = sample.keyword
    # "api_client_id" names no vendor: only a family's own word makes an id form keyworded.
    forms = [f for f in KEYWORDED_FORMS if sample.family != "generic" or "client_id" not in f]
    texts = [form.format(i=kw, I=kw.upper(), s=sample.secret) for form in forms]
    if sample.secret.startswith(("https://", "-----BEGIN")):
        texts.append(sample.secret)
    return texts


def bare(sample: Sample) -> list[str]:
    return [form.format(s=sample.secret) for form in BARE_FORMS]
