"""Child process for test_forget_crash: forget a whole source in chunks of ten events (so there are many
chunks to be killed between), printing "done" at the end."""

import sys

from magi_desktop.core import Memory, memory_forget


def main(path: str, source: str) -> None:
    memory_forget.FIRST_CHUNK = memory_forget.MAX_CHUNK = 10
    memory = Memory.open(path, embedder="hashing")
    print("open", flush=True)
    memory.forget(source=source)
    print("done", flush=True)
    memory.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
