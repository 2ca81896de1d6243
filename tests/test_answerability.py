"""Sufficiency as a decision and window-only questions (issue 17, items 1 and 2; architecture §16).

A small memory filled by the first-party collectors from real-format sources — a Git repository made
with GitPython, a Chromium History file, a zsh history — plus chat turns, asked the issue's questions.
"""

from datetime import timezone

import git
import pytest
from collecting import Ctx
from magi_plugins.browser import BrowserHistory
from magi_plugins.git import GitActivity
from magi_plugins.terminal import TerminalHistory
from payloads import chat
from test_collector_browser import chromium_history
from test_collector_git import commit

from magi_desktop.agents.output import pack_data, pack_text
from magi_desktop.core import Memory

pytestmark = pytest.mark.slow

NOW = 1_764_000_000.0        # 2025-11-24 16:00 UTC: "today" is that day in UTC
HOUR = 3600
DAY = 86400


def collected(collector, settings):
    return list(collector.collect(None, Ctx(settings)))


def build(tmp_path, minilm, *, cat=True):
    """Yesterday: the cat. Today: two commits, a page, a shell command, chat with a recommendation."""
    repo = git.Repo.init(tmp_path / "magi", initial_branch="main")
    with repo.config_writer() as config:          # the commits are the user's: git config says they are Ana
        config.set_value("user", "email", "ana@example.com")
    commit(repo, "text.py", "x\n", "index_text lives in core.text", int(NOW - 7 * HOUR))
    commit(repo, "llm.py", "y\n", "Retry LLM endpoint faults with backoff", int(NOW - 6 * HOUR))
    history = tmp_path / "History"
    chromium_history(history, [("https://neighbourhoods.example/lisbon", "Moving to Lisbon: a neighbourhood guide",
                                NOW - 5 * HOUR)]).close()
    zsh = tmp_path / ".zsh_history"
    zsh.write_text(f": {int(NOW - 180)}:0;make release\n")
    memory = Memory.open(tmp_path / "mem", embedder=minilm)
    memory.ingest_many(collected(GitActivity(), {"repositories": [str(tmp_path / "magi")], "backfill_days": 0}))
    memory.ingest_many(collected(BrowserHistory(now=lambda: NOW), {"profiles": [str(history)],
                                                                      "backfill_days": 30}))
    memory.ingest_many(collected(TerminalHistory(), {"files": [str(zsh)]}))
    turns = [
        chat("I finished the quarterly report this morning.", session="today", at=NOW - 4 * HOUR, item="report"),
        chat("Can you recommend a good book about sourdough baking?", session="today", at=NOW - 3 * HOUR),
        chat("I'd suggest Flour Water Salt Yeast by Ken Forkish; it explains levain step by step.",
             role="assistant", session="today", at=NOW - 3 * HOUR + 30, item="advice"),
    ]
    if cat:
        turns.insert(0, chat("My cat is called Miso, she is a grey tabby.", session="yesterday", at=NOW - DAY,
                             item="cat"))
    memory.ingest_many(turns)
    memory.process_pending()
    return memory


@pytest.fixture
def life(tmp_path, minilm):
    memory = build(tmp_path, minilm)
    yield memory
    memory.close()


def ask(memory, question):
    return memory.query(question, now=NOW, tz=timezone.utc)


def test_a_relation_the_memory_never_heard_is_insufficient_with_related_findings(life):
    pack = ask(life, "What is my sister's name?")
    data = pack.to_dict()
    assert pack.status == "insufficient" and pack.insufficient_evidence, data["findings"]
    assert data["findings"] and all(f["answers"] is False for f in data["findings"])   # the cat: related only
    assert any("do not answer" in hint for hint in pack.answering_hints)
    # What an agent reads over MCP says so too.
    assert all(f["answers"] is False for f in pack_data(pack)["findings"])
    assert "related: does not answer" in pack_text(pack) and "None of these findings answers" in pack_text(pack)


def test_a_commit_that_says_lives_is_not_a_residence(life):
    pack = ask(life, "Where do I live now?")
    assert pack.status == "insufficient", [(f.source, f.text, f.answers) for f in pack.findings]
    assert not any(f.answers for f in pack.findings)


def test_the_cat_answers_until_it_is_forgotten(life):
    before = ask(life, "What is my cat called?")
    assert before.status == "ok"
    answering = [f for f in before.findings if f.answers]
    assert answering and "Miso" in answering[0].text
    life.forget(source_item_ids=["cat"])
    life.process_pending()
    after = ask(life, "What is my cat called?")
    assert after.status == "insufficient", [(f.source, f.text, f.answers) for f in after.findings]
    assert all("Miso" not in f.text for f in after.findings)


@pytest.mark.parametrize("question", ["What did I do today?", "What have I done today?", "我今天做了什么",
                                      "今天"])
def test_what_did_i_do_today_lists_the_day_grouped_by_source(life, question):
    pack = ask(life, question)
    assert pack.status == "ok", pack.to_dict()
    assert all(f.answers for f in pack.findings)
    sources = [f.source for f in pack.findings if f.layer == "L1"]
    assert {"git", "chrome", "terminal", "chat"} <= set(sources)
    # Grouped: each source's findings are together, the user's own words first, page visits last.
    firsts = list(dict.fromkeys(sources))
    assert [s for i, s in enumerate(sources) if i and s != sources[i - 1]] == firsts[1:]
    assert firsts[0] == "chat" and firsts.index("git") < firsts.index("chrome")
    assert "yesterday" not in " ".join(f.text for f in pack.findings)        # the cat is not today's
    assert all(f.text != "My cat is called Miso, she is a grey tabby." for f in pack.findings)


def test_what_happened_recently_is_never_empty(life):
    pack = ask(life, "What happened recently?")
    assert pack.status == "ok" and pack.findings
    assert any("make release" in f.text for f in pack.findings)


def test_what_did_you_recommend_last_time_finds_the_assistant(life):
    pack = ask(life, "What did you recommend last time?")
    assert pack.query_mode == "episode_recall"
    assert pack.status == "ok"
    assert pack.findings[0].source_item_id == "advice" and pack.findings[0].answers


def test_a_window_with_nothing_in_it_stays_insufficient(life):
    pack = ask(life, "What did I do last month?")
    assert pack.status == "insufficient" and not any(f.answers for f in pack.findings)


def test_answers_is_in_every_finding_of_the_json(life):
    data = ask(life, "What is my cat called?").to_dict()
    assert data["findings"] and all(isinstance(f["answers"], bool) for f in data["findings"])
    assert data["insufficient_evidence"] is (data["status"] == "insufficient")


def test_last_week_holds_yesterday_on_a_monday(life):
    """NOW is a Monday: "last week" is the week before, which holds the cat message of Sunday."""
    pack = ask(life, "上周")
    assert pack.status == "ok" and [f.source_item_id for f in pack.findings if f.layer == "L1"] == ["cat"]


def test_a_summarised_window_leads_with_its_summary(life):
    """Where L3 has summarised the window, its summary leads; the events follow, grouped by source."""
    life.run_due(now=NOW + DAY)
    life.process_pending()
    pack = life.query("What did I do yesterday?", now=NOW + DAY, tz=timezone.utc)
    assert pack.status == "ok", pack.to_dict()
    assert pack.findings[0].layer == "L3" and pack.findings[0].answers
    assert {"git", "chat"} <= {f.source for f in pack.findings if f.layer == "L1"}
