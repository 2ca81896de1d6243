"""Child process for test_forget_crash: forget a whole source in chunks of ten events (so there are many
chunks to be killed between), printing "done" at the end; "slow": 50 ms between chunks."""

import sys
import time

from magi_desktop.core import Memory
from magi_desktop.core.services import forgetting as memory_forget


def main(path: str, source: str, slow: bool = False) -> None:
    memory_forget.FIRST_CHUNK = memory_forget.MAX_CHUNK = 10
    if slow:
        sleep = time.sleep
        memory_forget.time = type("SlowTime", (), {"sleep": staticmethod(lambda _s: sleep(0.05)),
                                                    "monotonic": staticmethod(time.monotonic),
                                                    "time": staticmethod(time.time)})
    memory = Memory.open(path, embedder="hashing")
    print("open", flush=True)
    memory.forget(source=source)
    print("done", flush=True)
    memory.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], slow=sys.argv[3:] == ["slow"])
