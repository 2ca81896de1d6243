"""The sufficiency decision on hand-made findings (core/retrieval/sufficiency.py; issue 17, item 1).

What a turn only *asks* tells nothing of anyone, and a question about no one in particular is answered by
anyone's words — the two rules calibrated on LoCoMo dev after the margin (benchmarks/README.md,
"Answerability").
"""

from magi_desktop.core.retrieval.pack import Finding
from magi_desktop.core.retrieval.sufficiency import Asked, judge, told, verdict
from magi_desktop.core.retrieval.temporal import TemporalIntent

NOW = 1_764_000_000.0


def turn(text: str, speaker: str | None = None, event: str = "e") -> Finding:
    return Finding(layer="L1", text=text, occurred_at=NOW, source="chat", source_item_id=None, session_id="s",
                   author="user", evidence_class="user_self_report", score=1.0, event_id=event, speaker=speaker)


def asked(question: str, *persons: str) -> Asked:
    return Asked.of(question, [(i, "person", p) for i, p in enumerate(persons)], TemporalIntent())


def test_told_keeps_what_a_turn_tells_and_drops_its_questions():
    assert told("Love that purple color! For walking or running?") == "Love that purple color!"
    assert told("Did you go? I went to the market. Was it fun?!") == "I went to the market."
    # a tag question tells what it asks to be agreed with
    assert told("Sunflowers mean warmth, right? Did you go?") == "Sunflowers mean warmth, right?"
    assert told("It was big, wasn't it?") == "It was big, wasn't it?"
    assert told("I ran a race.") == "I ran a race."
    assert told("") == ""


def test_a_turn_that_only_asks_does_not_answer_for_its_speaker():
    """Anna asks about the shoes Ben showed her: it says nothing of what Anna's shoes are for."""
    question = asked("What are Anna's new running shoes for?", "anna")
    asking = verdict(turn("Love that purple color! Are those running shoes new?", "Anna"), question, 0.62)
    assert not asking["answers"] and asking["coverage"] == 0
    telling = verdict(turn("My new running shoes are for the marathon in May.", "Anna"), question, 0.62)
    assert telling["answers"]


def test_the_other_speakers_echoing_question_does_not_set_the_bar():
    """Gina asks "got any favourite dance styles?" in the question's own words; Jon's answer, in other words,
    still answers "What is Jon's favourite style of dance?" (the margin is measured against what is *told*)."""
    findings = [turn("Wow Jon, same here! Dance is my go-to for stress relief. Got any favorite dance styles?",
                     "Gina", "gina"),
                turn("I love all dances, but contemporary is my top pick.", "Jon", "jon")]
    trace = judge(findings, asked("What is Jon's favorite style of dance?", "jon"), {"gina": 0.64, "jon": 0.63},
                  "What is Jon's favorite style of dance?")
    assert [f.answers for f in findings] == [False, True], trace


def test_a_question_about_no_one_is_answered_by_a_labelled_turn():
    """"Anna: …" speaks for Anna, so it does not answer a question about the user — but "what did the charity
    race raise money for?" asks about no one."""
    relayed = turn("Anna: The charity race raised money for mental health.", "Anna")    # Anna: a settled speaker
    assert verdict(relayed, asked("What did the charity race raise money for?"), 0.6)["answers"]
    assert not verdict(relayed, asked("What did my charity race raise money for?"), 0.6)["answers"]
    assert not verdict(turn("Anna: I live in Oslo.", "Anna"), asked("Where do I live?"), 0.7)["answers"]


def test_what_the_speaker_says_only_of_you_is_about_the_addressee():
    """Anna's "Glad your son is okay, Ben" speaks of Ben's son, though Anna says "I" in another sentence."""
    question = asked("What happened to Anna's son?", "anna")
    assert not verdict(turn("Glad your son is okay, Ben. I was so worried for all of you.", "Anna"), question,
                       0.55)["whose"]
    assert verdict(turn("My son is okay now, thanks. I was so worried.", "Anna"), question, 0.55)["answers"]
    assert verdict(turn("Thanks, Ben! My son broke his arm, but you know kids.", "Anna"), question, 0.55)["answers"]


def test_a_match_trailing_the_other_speakers_by_more_than_the_margin_is_only_related():
    """Ben ran the charity race; Anna's looser turn about it trails Ben's by 0.18 (similarity + ½ coverage),
    beyond the calibrated margin (0.16): the question has put the race on the wrong person."""
    question = "What did Anna realize after her charity race?"
    findings = [turn("I ran a charity race for mental health last Saturday and realized self-care matters.",
                     "Ben", "ben"),
                turn("I realize I should try a race some day.", "Anna", "anna")]
    trace = judge(findings, asked(question, "anna"), {"ben": 0.62, "anna": 0.607}, question)
    assert not any(f.answers for f in findings), trace
    assert trace["findings"][1]["margin"] == 0.18
