"""The child process of the crash-injection runs (see crashing.py): mixed work on one memory, each
committed ingest acknowledged on stdout ("ack N": payloads 0..N are stored), each operation announced
("op NAME") and finished ("ok"), until SIGKILL or "done"."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from crashing import T0, source

from magi_desktop.core import Memory


def say(line: str) -> None:
    print(line, flush=True)


def main(path: str, total: int, seed: int) -> None:
    rng = random.Random(seed)
    memory = Memory.open(path, embedder="hashing")
    for rule in memory.aggregation_settings():     # counted below: no activity block beside the events
        memory.set_aggregation(rule, False)
    payloads = source(total)
    i = 0
    while i < total:
        roll = rng.random()
        if roll < 0.50:
            chunk = payloads[i:i + rng.randint(2, 40)]
            say("op ingest_many")
            memory.ingest_many(chunk)
            i += len(chunk)
            say(f"ack {i - 1}")
        elif roll < 0.62:
            say("op ingest")
            for _ in range(rng.randint(1, 5)):
                if i < total:
                    memory.ingest(payloads[i])
                    say(f"ack {i}")
                    i += 1
        elif roll < 0.80:
            say("op process_pending")
            memory.process_pending(limit=rng.randint(8, 64))
        elif roll < 0.93:
            say("op run_due")
            memory.run_due(now=(payloads[i - 1]["occurred_at"] if i else T0) + 3600)
        elif roll < 0.98:
            say("op end_session")
            sessions = [p["session_id"] for p in payloads[:i] if p["source_type"] == "chat"]
            memory.end_session(sessions[-1] if sessions else None)
        else:
            say("op backup")
            memory.backup_now()
        say("ok")
    memory.close()
    say("done")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
