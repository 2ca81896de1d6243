"""A deterministic, realistic mix of payloads for the benchmarks.

Sensor events (browser, music, terminal, Git, app usage, calendar) and chat
turns (user and assistant, about 12% Chinese), a few carrying secrets, with
timestamps spread evenly over ``span_days`` from 2025-01-01 (a year unless told otherwise), however many
payloads are asked for.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

START = 1_735_689_600.0  # 2025-01-01

_SITES = [("github.com", "Pull requests"), ("docs.python.org", "sqlite3 — DB-API 2.0 interface"),
          ("news.ycombinator.com", "Hacker News"), ("www.bilibili.com", "哔哩哔哩 (゜-゜)つロ 干杯~"),
          ("stackoverflow.com", "How do I profile Python code?"), ("arxiv.org", "Attention Is All You Need"),
          ("www.zhihu.com", "如何评价新款空气炸锅？"), ("mail.google.com", "Inbox (3)")]
_TRACKS = [("End Of An Era", "Dua Lipa"), ("Blinding Lights", "The Weeknd"), ("晴天", "周杰伦"),
           ("Clair de Lune", "Claude Debussy"), ("Bohemian Rhapsody", "Queen")]
_COMMANDS = ["git status", "pytest -q tests/", "ls -la", "docker compose up -d", "make build",
             "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456",
             "mysql -u root -pHunter2 shop", "curl -H 'Authorization: Bearer abcdef1234567890' https://api.x.io",
             "python -m http.server 8000", "vim README.md"]
_APPS = ["Firefox", "Visual Studio Code", "Terminal", "Slack", "Spotify", "微信"]
_USER_EN = ["I just bought an air fryer and I love it", "What should I cook tonight?",
            "I moved to Jiaxing last month", "Can you summarise this article for me?",
            "My sister's birthday is on the 14th", "I have been running every morning this week",
            "If I switched to a standing desk, would my back pain improve?",
            "Remind me to call the bank tomorrow", "I think the meeting went well, the client liked the demo",
            "where did I put the invoice from March"]
_USER_ZH = ["我新买了一个空气炸锅，我觉得它很好用", "我住在上海", "明天会下雨吗", "帮我查一下明天的天气",
            "我最近在学习吉他", "如果我换工作会怎么样"]
_ASSISTANT = ["Here are three soup recipes that work well in a pressure cooker: ...",
              "Sure — I have set a reminder for tomorrow at 9:00.",
              "That sounds great! Running every morning is a good habit. " * 3,
              "根据天气预报，明天有小雨，记得带伞。"]


def payloads(n: int, seed: int = 7, span_days: float = 365.0) -> Iterator[dict]:
    rng = random.Random(seed)
    for i in range(n):
        at = START + i * (span_days * 86400 / max(n, 1)) + rng.random()
        roll = rng.random()
        if roll < 0.50:
            yield _chat(rng, i, at)
        elif roll < 0.68:
            domain, title = rng.choice(_SITES)
            yield {"source_type": "chrome", "source_item_id": f"chrome-{i}", "occurred_at": at,
                   "activity": {"action_code": "visit_page"},
                   "provenance": {"url": f"https://{domain}/item/{i}?ref=home", "title": title,
                                  "visit_count": rng.randint(1, 20)}}
        elif roll < 0.78:
            track, artist = rng.choice(_TRACKS)
            yield {"source_type": "music", "source_item_id": f"music-{i}", "occurred_at": at,
                   "activity": {"action_code": "listen_music", "object_code": "song"},
                   "provenance": {"track_name": track, "artist_name": artist,
                                  "play_duration_sec": rng.randint(30, 400)},
                   "entities": [{"mention_text": artist, "entity_type": "person"}], "tags": ["music"]}
        elif roll < 0.88:
            yield {"source_type": "terminal", "source_item_id": f"term-{i}", "occurred_at": at,
                   "activity": {"action_code": "run_command"},
                   "provenance": {"command": rng.choice(_COMMANDS), "cwd": "/home/me/projects/magi"}}
        elif roll < 0.94:
            yield {"source_type": "git", "source_item_id": f"git-{i}", "occurred_at": at,
                   "activity": {"action_code": "git_commit"},
                   "provenance": {"repo": "magi", "branch": "main", "message": f"Fix issue #{i % 300}",
                                  "files_changed": rng.randint(1, 12)}}
        elif roll < 0.98:
            yield {"source_type": "app_usage", "source_item_id": f"app-{i}", "occurred_at": at,
                   "activity": {"action_code": "use_app"},
                   "provenance": {"app_name": rng.choice(_APPS), "duration_sec": rng.randint(60, 3600)}}
        else:
            yield {"source_type": "calendar", "source_item_id": f"cal-{i}", "occurred_at": at,
                   "activity": {"action_code": "calendar_event"},
                   "provenance": {"summary": "Team sync", "start": at, "end": at + 1800, "location": "Room 4"}}


def _chat(rng: random.Random, i: int, at: float) -> dict:
    session = f"session-{i // 30}"
    if rng.random() < 0.45:
        text = rng.choice(_ASSISTANT)
        role = "assistant"
    else:
        role = "user"
        text = rng.choice(_USER_ZH) if rng.random() < 0.24 else rng.choice(_USER_EN)
    turn = {"role": role, "text": f"{text} (#{i})"}
    if role == "user":
        turn["provenance"] = "human_input"
    return {"source_type": "chat", "session_id": session, "source_item_id": f"turn-{i}", "occurred_at": at,
            "chat": turn}
