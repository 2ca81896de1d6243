"""The design lives in the repository (issue 18, item 8): every "architecture §N" citation in the code,
tests, benchmarks and documents names a section of docs/architecture.md, and no document links a file
outside the repository (a lone clone has nothing there) or a heading that does not exist."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
SKIPPED_DIRS = {".git", ".venv", "venv", "build", "dist", "node_modules", "__pycache__", ".pytest_cache",
                ".hypothesis", ".ruff_cache", ".mypy_cache"}
CITING_SUFFIXES = (".py", ".md", ".sql", ".sh", ".toml", ".iss", ".spec", ".cfg", ".ini")

_NUMBERED_HEADING = re.compile(r"^#{2,4}\s+(\d+(?:\.\d+)*)\.?\s", re.MULTILINE)
# Where a citation starts: "architecture §5", "docs/architecture.md §14", and the old "DESIGN §9".
_CITATION = re.compile(r"\b(architecture(?:\.md)?|DESIGN(?:\.md)?)\s+§")
_SECTION = re.compile(r"§\s*(\d+(?:\.\d+)*)")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def repository_files(suffixes: tuple[str, ...]) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        found += [Path(folder) / name for name in files if name.endswith(suffixes)]
    return sorted(found)


def sections(markdown: str) -> set[str]:
    """The numbers of a document's numbered headings ("## 5. Retrieval" → "5", "### 3.1 …" → "3.1")."""
    return set(_NUMBERED_HEADING.findall(markdown))


def citations(text: str) -> list[tuple[int, str, str]]:
    """(line, cited document, section) for every citation: each "§N" from a citation's start to the end of
    its line ("architecture §9, §14", "§13/§14", "§4 user_directive, §9")."""
    cited = []
    for number, line in enumerate(text.splitlines(), start=1):
        start = _CITATION.search(line)
        if start:
            cited += [(number, start.group(1), section) for section in _SECTION.findall(line[start.start():])]
    return cited


def bad_citations(text: str, known: set[str]) -> list[str]:
    """Citations of the design outside the repository, or of a section docs/architecture.md lacks."""
    return [f"line {line}: {document} §{section}" for line, document, section in citations(text)
            if document.startswith("DESIGN") or section not in known]


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = _CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in _HEADING.findall(_FENCE.sub("", markdown)):
        base = slug(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


def link_targets(markdown: str) -> list[str]:
    """Every link target outside code blocks and code spans (inline and reference-style)."""
    prose = _CODE_SPAN.sub("x", _FENCE.sub("", markdown))
    return _LINK.findall(prose) + _REFERENCE.findall(prose)


def broken_links(document: Path, root: Path = ROOT) -> list[str]:
    """Links of ``document`` to a file outside ``root``, to a missing file, or to a missing heading."""
    problems = []
    for target in link_targets(document.read_text("utf-8")):
        if _SCHEME.match(target):
            continue                       # a web address: not a file of the repository
        path, _, fragment = target.partition("#")
        path = path.split("?", 1)[0]
        linked = (document.parent / path).resolve() if path else document
        if not linked.is_relative_to(root):
            problems.append(f"{target}: outside the repository")
        elif not linked.exists():
            problems.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked.read_text("utf-8")):
            problems.append(f"{target}: no heading #{fragment} in {linked.name}")
    return problems


# ------------------------------------------------------------------ the repository


def test_the_architecture_document_keeps_every_section_number_the_code_relies_on():
    known = sections(ARCHITECTURE.read_text("utf-8"))
    assert {str(n) for n in range(1, 19)} | {"3.1", "3.2"} <= known, sorted(known)


def test_every_design_citation_names_a_section_of_the_architecture_document():
    known = sections(ARCHITECTURE.read_text("utf-8"))
    bad = {}
    for path in repository_files(CITING_SUFFIXES):
        if path == Path(__file__).resolve():
            continue                       # this file's own examples below
        found = bad_citations(path.read_text("utf-8", errors="replace"), known)
        if found:
            bad[str(path.relative_to(ROOT))] = found
    assert bad == {}


def test_the_code_cites_the_architecture_document():
    """The check above is not vacuous: the code's citations are found."""
    cited = [c for path in repository_files((".py",)) if path != Path(__file__).resolve()
             for c in citations(path.read_text("utf-8", errors="replace"))]
    assert len(cited) > 50


def test_no_document_links_outside_the_repository_or_to_a_missing_file_or_heading():
    bad = {str(doc.relative_to(ROOT)): found for doc in repository_files((".md",)) if (found := broken_links(doc))}
    assert bad == {}


def test_readme_links_the_architecture_document_and_contributing():
    targets = link_targets((ROOT / "README.md").read_text("utf-8"))
    assert "docs/architecture.md" in targets and "CONTRIBUTING.md" in targets


# ------------------------------------------------------------------ the checks themselves


def test_citations_are_read_with_their_lists():
    text = ("x = 1  # architecture §5\n"
            '"""Thing (architecture §9, §14) and §99 of nothing."""\n'
            "# breaker (architecture §13/§14)\n"
            "prose (docs/architecture.md §4 user_directive, §9)\n"
            "see sqlite.org/howtocorrupt.html §2.2\n")
    assert [(line, section) for line, _, section in citations(text)] == [
        (1, "5"), (2, "9"), (2, "14"), (2, "99"), (3, "13"), (3, "14"), (4, "4"), (4, "9")]


def test_a_missing_section_and_the_outside_design_are_flagged():
    known = {"5", "9", "14"}
    assert bad_citations("# architecture §5\n# architecture §17\n# DESIGN §5\n", known) == [
        "line 2: architecture §17", "line 3: DESIGN §5"]


def test_links_outside_the_root_missing_files_and_headings_are_flagged(tmp_path):
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "guide.md").write_text("# Guide\n\n## The app\n", "utf-8")
    readme = root / "README.md"
    readme.write_text("[design](../shared/DESIGN.md) [guide](docs/guide.md#the-app) [gone](docs/gone.md)\n"
                      "[bad](docs/guide.md#no-such) [web](https://example.org/x) [self](#readme)\n"
                      "```\n[in code](../outside.md)\n```\n`[span](../outside.md)`\n\n# Readme\n", "utf-8")
    assert broken_links(readme, root) == ["../shared/DESIGN.md: outside the repository",
                                          "docs/gone.md: no such file",
                                          "docs/guide.md#no-such: no heading #no-such in guide.md"]


def test_anchors_follow_github():
    assert anchors("## 14. Reliability, privacy, security\n## Agents: the MCP server\n## Issue 16 — forget\n"
                   "## Tests\n## Tests\n") == {"14-reliability-privacy-security", "agents-the-mcp-server",
                                             "issue-16--forget", "tests", "tests-1"}
