"""Child process for the lock tests: another program holding the memory's write lock, or a read snapshot.

    python lock_holder.py DB write SECONDS   # BEGIN IMMEDIATE + a write, held SECONDS, then COMMIT
    python lock_holder.py DB read            # a read transaction held until a line arrives on stdin
    python lock_holder.py - serve            # commands on stdin: "hold DB" (a read snapshot), "release"

It prints "held" once it holds the lock (or the snapshot) and "released" after letting go. A plain
sqlean connection, as any other program reading or writing the file would use.
"""
# Raw SQL throughout: this is the other program, holding the file's write lock or a read snapshot.

import sys
import time

import sqlean


def hold(path: str, mode: str) -> sqlean.Connection:
    conn = sqlean.connect(path, isolation_level=None, timeout=30)
    conn.execute("PRAGMA journal_mode = WAL")      # as the memory's own connections (a no-op when it is)
    if mode == "write":
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("CREATE TABLE IF NOT EXISTS held_by_another_program (at REAL)")
        conn.execute("INSERT INTO held_by_another_program VALUES (?)", (time.time(),))
    else:
        conn.execute("BEGIN")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()    # the snapshot starts here
    print("held", flush=True)
    return conn


def release(conn: sqlean.Connection, mode: str) -> None:
    conn.execute("COMMIT" if mode == "write" else "ROLLBACK")
    conn.close()
    print("released", flush=True)


def serve() -> None:
    conn = None
    for line in sys.stdin:
        command, _, path = line.strip().partition(" ")
        if command == "hold" and conn is None:
            conn = hold(path, "read")
        elif command == "release" and conn is not None:
            release(conn, "read")
            conn = None
        elif command == "quit":
            break
        else:
            print("ok", flush=True)


def main(path: str, mode: str, seconds: float | None) -> None:
    if mode == "serve":
        serve()
        return
    conn = hold(path, mode)
    if seconds is None:
        sys.stdin.readline()
    else:
        time.sleep(seconds)
    release(conn, mode)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) > 3 else None)
