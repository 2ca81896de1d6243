"""Someone else's activity: a sensor event whose provenance names an ``actor`` (a colleague's commit) reads as
theirs and becomes theirs in L2 — never "the user committed to …", whether the rules or a model read it."""

import pytest
from payloads import sensor

from magi_desktop.core import Memory
from magi_desktop.core.contracts import PayloadError, validate_payload
from magi_desktop.core.llm import ScriptedLLM
from magi_desktop.core.render import TemplateRegistry
from magi_desktop.core.store.graph import named_edges
from magi_desktop.plugin_api import activity, entity

T0 = 1_764_000_000.0


def commit(message, actor=None, at=T0, item=None):
    return activity("git", "git_commit", at, {"repo": "falcon", "branch": "main", "message": message},
                    item_id=item or message, entities=[entity("falcon", "project")], actor=actor)


def committed_to(memory):
    return sorted((e.subject, e.object, e.observations) for e in named_edges(memory.db.reader())
                  if e.predicate == "COMMITTED_TO")


@pytest.mark.parametrize("actor, words", [("", "must not be empty"), (7, "must be a string"),
                                          ("x" * 201, "the limit is 200")])
def test_an_actor_must_be_a_name(actor, words):
    with pytest.raises(PayloadError) as caught:
        validate_payload(sensor("git_commit", {"repo": "falcon", "actor": actor}, source="git"))
    assert caught.value.field == "provenance.actor" and words in caught.value.reason


def test_someone_elses_event_reads_as_theirs_even_where_a_template_does_not_say_who():
    registry = TemplateRegistry()
    assert registry.render(validate_payload(commit("Fix the parser", actor="Ana"))) == \
        "Git: Ana committed to falcon on branch main: “Fix the parser”"
    assert registry.render(validate_payload(commit("Fix the parser"))) == \
        "Git: Committed to falcon on branch main: “Fix the parser”"
    registry.register("kindle", "read_book", "Read “{title}”")     # a plugin's template without {actor}
    shared = activity("kindle", "read_book", T0, {"title": "Dune"}, actor="Bo")
    assert registry.render(validate_payload(shared)) == "Kindle: Read “Dune” (by Bo)"


def test_the_rules_make_someone_elses_commit_their_activity(memory):
    memory.ingest_many([commit("Mine"), commit("Ana's", actor="Ana"), commit("Ana's again", actor="Ana")])
    memory.process_pending()
    user = [s for s, _, _ in committed_to(memory) if s != "Ana"]
    assert committed_to(memory) == sorted([(user[0], "falcon", 1), ("Ana", "falcon", 2)])


def test_a_model_cannot_make_someone_elses_commit_the_users(tmp_path):
    llm = ScriptedLLM([("l2.phase1", "Ana committed", {
        "entities": [{"event_index": 0, "name": "falcon", "entity_type": "project"}],
        "fact_claims": [
            {"event_index": 0, "subject": "USER", "predicate": "COMMITTED_TO", "object": "falcon",
             "evidence_text": "committed to falcon"},
            {"event_index": 0, "subject": "Ana", "predicate": "COMMITTED_TO", "object": "falcon",
             "evidence_text": "Ana committed to falcon"}]})])
    memory = Memory.open(tmp_path / "m", embedder="hashing", llm=llm)
    memory.ingest(commit("Fix the parser", actor="Ana"))
    report = memory.process_pending()["l2"]
    assert committed_to(memory) == [("Ana", "falcon", 1)]
    assert report["dropped"] == {"someone_elses_activity": 1}
    assert llm.finished
    memory.close()


def test_someone_elses_commit_does_not_answer_what_the_user_did(memory):
    memory.ingest_many([commit("Add the CSV export", at=T0), commit("Fix the login page", actor="Ana", at=T0 + 60)])
    memory.process_pending()
    mine = memory.query("what did I commit?", now=T0 + 3600)
    answers = {f.text: f.answers for f in mine.findings if f.layer == "L1"}
    assert answers == {"Git: Committed to falcon on branch main: “Add the CSV export”": True,
                       "Git: Ana committed to falcon on branch main: “Fix the login page”": False}
    # The graph's edges too: Ana's is hers (its speaker), and does not answer what the user did.
    edges = {f.text.split(" (")[0]: (f.speaker, f.answers) for f in mine.findings if f.event_id.startswith("edge:")}
    assert edges == {"the user committed to falcon": (None, True), "Ana committed to falcon": ("Ana", False)}
    theirs = memory.query("what did Ana commit?", now=T0 + 3600)
    assert [(f.text, f.speaker) for f in theirs.findings if f.layer == "L1" and f.answers] == [
        ("Git: Ana committed to falcon on branch main: “Fix the login page”", "Ana")]
