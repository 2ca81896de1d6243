"""Chinese segmentation for the full-text index, and jieba's dictionary released when idle."""

import time

from magi_desktop.core import text


def test_chinese_is_segmented_for_search():
    document = text.fts_document("我新买了一个空气炸锅")
    assert "空气" in document.split() and "炸锅" in document.split()
    assert text.fts_document("plain English") == "plain English"


def test_the_dictionary_is_released_after_the_idle_period_and_comes_back(monkeypatch):
    monkeypatch.setenv("MAGI_EMBEDDER_IDLE_SECONDS", "0.2")
    monkeypatch.setattr(text, "_release_timer", None)
    text.fts_document("我住在杭州")
    assert text._jieba is not None
    deadline = time.monotonic() + 10
    while text._jieba is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert text._jieba is None                              # released while nothing used it
    assert "杭州" in text.fts_document("我住在杭州").split()   # and loaded again on the next use
    monkeypatch.setenv("MAGI_EMBEDDER_IDLE_SECONDS", "300")
