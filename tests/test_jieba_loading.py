"""jieba's dictionary (81 MB resident) is loaded only when Chinese must be segmented: an English question over a
memory holding Chinese never loads it; a Chinese question does."""

import subprocess
import sys
import textwrap

import pytest
from payloads import chat

from magi_desktop.core import Memory
from magi_desktop.core.retrieval.fusion import short_unmatched
from magi_desktop.core.retrieval.terms import content_word_count, shared_stems, stem, stems

pytestmark = pytest.mark.slow

ENGLISH_AND_CHINESE = [
    "I bought an air fryer at the market on Saturday",
    "我新买了一个空气炸锅，周六在市场买的",
    "My sister Ana moved to Lisbon last spring",
    "我姐姐去年春天搬到了里斯本",
    "Remember that I prefer window seats on flights",
    "请记住我坐飞机喜欢靠窗的座位",
    "Ana: the air fryer makes great fries 空气炸锅很好用",
]

SESSION = textwrap.dedent("""
    import sys
    from magi_desktop.core import Memory
    from magi_desktop.core.retrieval.engine import MODES

    memory = Memory.open(sys.argv[1], embedder="hashing")
    for question in ("what did I buy on Saturday?", "where does my sister live?", "air fryer",
                     "what do I prefer on flights?", "what did Ana say about fries?"):
        for mode in (None, *MODES):
            memory.query(question, mode=mode, now=1_800_000_000.0)
    print("english", "jieba" in sys.modules, flush=True)
    pack = memory.query("我买了什么？", now=1_800_000_000.0)
    print("chinese", "jieba" in sys.modules, len(pack.findings) > 0, flush=True)
    memory.close()
""")


def test_an_english_session_never_loads_jieba_a_chinese_question_does(tmp_path):
    memory = Memory.open(tmp_path / "data", embedder="hashing")
    memory.ingest_many([chat(text, at=1.7e9 + i * 60, session="s1") for i, text in enumerate(ENGLISH_AND_CHINESE)])
    memory.process_pending()
    memory.close()
    done = subprocess.run([sys.executable, "-c", SESSION, str(tmp_path / "data")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["english False", "chinese True True"], done.stdout + done.stderr


def test_shared_stems_are_the_stems_in_common_without_segmenting_for_english():
    mixed = "Ana: the air fryer makes great fries 空气炸锅很好用"
    english = {stem("fryer"), stem("fries"), stem("lisbon")}
    assert shared_stems(english, mixed) == english & stems(mixed) == {stem("fryer"), stem("fries")}
    chinese = {"空气", "炸锅", "里斯本"}
    assert shared_stems(chinese, mixed) == chinese & stems(mixed) == {"空气", "炸锅"}


def test_word_count_of_chinese_for_an_english_question_is_estimated_by_characters():
    english = "the air fryer makes great fries"
    assert content_word_count(english, {"fryer"}) == len(stems(english))
    # Seven CJK characters count four words (two characters a word, rounded up) next to the two English words.
    assert content_word_count("great fries 空气炸锅很好用", {"fryer"}) == 2 + 4
    assert content_word_count("great fries 空气炸锅很好用", {"炸锅"}) == len(stems("great fries 空气炸锅很好用"))
    assert short_unmatched("好的", {stem("fryer")})
    assert not short_unmatched("我新买了一个空气炸锅，周六在市场买的", {stem("fryer")})
