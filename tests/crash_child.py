"""Child process for test_crash: ingest a stream, acknowledging each committed batch on stdout."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from payloads import mixed_stream

from magi_desktop.core import Memory


def main(path: str, total: int, batch: int) -> None:
    memory = Memory.open(path, embedder="hashing")
    for rule in memory.aggregation_settings():     # counted below: no activity block beside the events
        memory.set_aggregation(rule, False)
    payloads = list(mixed_stream(total))
    for first in range(0, total, batch):
        chunk = payloads[first:first + batch]
        if len(chunk) == 1 or first % (batch * 3) == 0:
            for offset, payload in enumerate(chunk):
                memory.ingest(payload)
                print(f"ack {first + offset}", flush=True)
        else:
            memory.ingest_many(chunk)
            print(f"ack {first + len(chunk) - 1}", flush=True)
        if first % (batch * 5) == 0:
            memory.process_pending(limit=batch)
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
