"""``magi doctor``: check that this machine can run the memory, and say what to fix."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MIN_SQLITE = (3, 44, 0)  # FTS5 contentless_delete needs 3.43+


@dataclass
class Check:
    name: str
    status: str  # OK | WARN | FAIL
    detail: str


def _sqlite_checks() -> list[Check]:
    checks = []
    try:
        from .core.store.connection import connect, sqlite_version
        from .core.store.diagnostics import make_contentless_fts5, vec_version
    except Exception as exc:  # noqa: BLE001 - report any import failure
        return [Check("sqlite", "FAIL", f"cannot import sqlean / sqlite-vec: {exc}; run ./install.sh")]
    version = sqlite_version()
    ok = tuple(int(p) for p in version.split(".")[:3]) >= MIN_SQLITE
    checks.append(Check("sqlite", "OK" if ok else "FAIL",
                        f"SQLite {version} (sqlean)" + ("" if ok else f"; need {'.'.join(map(str, MIN_SQLITE))}+")))
    conn = connect(":memory:")
    try:
        make_contentless_fts5(conn)
        checks.append(Check("fts5", "OK", "FTS5 with contentless_delete"))
    except Exception as exc:  # noqa: BLE001
        checks.append(Check("fts5", "FAIL", f"FTS5 unavailable: {exc}"))
    try:
        checks.append(Check("sqlite-vec", "OK", f"sqlite-vec {vec_version(conn)}"))
    except Exception as exc:  # noqa: BLE001
        checks.append(Check("sqlite-vec", "FAIL", f"sqlite-vec did not load: {exc}"))
    conn.close()
    return checks


def _segmentation_check() -> Check:
    try:
        from .core.text import fts_document

        started = time.perf_counter()
        segmented = fts_document("我新买了一个空气炸锅")
        took = time.perf_counter() - started
        ok = "炸锅" in segmented.split() or "空气" in segmented.split()
        return Check("chinese", "OK" if ok else "FAIL",
                     f"jieba segmentation ({took:.1f} s first use): {segmented.strip()}")
    except Exception as exc:  # noqa: BLE001
        return Check("chinese", "FAIL", f"jieba failed: {exc}")


def _model_check() -> Check:
    try:
        from .core.embed import MiniLMEmbedder, ModelNotInstalled
    except Exception as exc:  # noqa: BLE001
        return Check("embedding model", "FAIL", f"cannot import the embedder: {exc}")
    try:
        embedder = MiniLMEmbedder(idle_seconds=None)
    except ModelNotInstalled as exc:
        return Check("embedding model", "WARN", f"{exc}. Falling back to the hashing embedder (no semantic search)")
    try:
        started = time.perf_counter()
        vector = embedder.embed(["doctor check"])[0]
        took = time.perf_counter() - started
        backend = embedder.backend
        embedder.release()
    except Exception as exc:  # noqa: BLE001
        return Check("embedding model", "FAIL", f"model at {embedder.directory} failed: {exc}")
    return Check("embedding model", "OK", f"{embedder.name} on {backend}, {vector.shape[0]} d, loaded and ran in "
                                          f"{took:.1f} s ({embedder.directory})")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _data_checks(data_dir: Path | None) -> list[Check]:
    from .core.paths import database_path

    db_path = database_path(data_dir)
    folder = db_path.parent
    checks = []
    if not folder.exists():
        return [Check("data folder", "OK", f"{folder} (not created yet; the first run creates it, mode 0700)")]
    if os.name == "posix":
        mode = _mode(folder)
        private = mode & 0o077 == 0
        # A warning, not a failure: the database files themselves are checked
        # below, and a folder may be shared on purpose.
        checks.append(Check("data folder", "OK" if private else "WARN",
                            f"{folder} mode {mode:04o}" + ("" if private else
                                                           f"; others can list it; fix with: chmod 700 '{folder}'")))
    else:
        checks.append(Check("data folder", "OK", str(folder)))
    if os.name == "posix":
        checks += _private_file_checks(folder, db_path)
    if not db_path.exists():
        checks.append(Check("database", "OK", f"{db_path} (not created yet)"))
        return checks
    try:
        from .core.store.connection import connect
        from .core.store.diagnostics import event_count, quick_check

        conn = connect(db_path, readonly=True)
        result = quick_check(conn)
        events = event_count(conn)
        conn.close()
        checks.append(Check("database", "OK" if result == "ok" else "FAIL",
                            f"{db_path}: {events} events, quick_check {result}"))
    except Exception as exc:  # noqa: BLE001
        checks.append(Check("database", "FAIL", f"{db_path} cannot be read: {exc}"))
    return checks


# What Magi writes into the data folder, all readable by the user only (architecture §14): the database and its
# write-ahead log, the settings, and the backups (a folder, 0700, of 0600 files).
PRIVATE_FILES = ("settings.json", "collectors.json")
BACKUP_FOLDER = "backups"


def _private_file_checks(folder: Path, db_path: Path) -> list[Check]:
    """A FAIL naming each file others can read (or a backups folder others can list), with the fix."""
    paths = [*sorted(folder.glob(db_path.name + "*")), *(folder / name for name in PRIVATE_FILES)]
    backups = folder / BACKUP_FOLDER
    if backups.is_dir():
        paths += [backups, *sorted(backups.iterdir())]
    checks = []
    for path in paths:
        if not path.exists() or path.is_symlink():
            continue
        mode = _mode(path)
        if mode & 0o077:
            kind = "database" if path.name.startswith(db_path.name) else "private files"
            fix = "chmod 700" if path.is_dir() else "chmod 600"
            checks.append(Check(kind, "FAIL", f"{path} mode {mode:04o}; others can read it; fix with: {fix} '{path}'"))
    return checks


def _qt_check() -> Check:
    # In a child process: a broken Qt install can abort the interpreter, and
    # the doctor itself stays Qt-free like the rest of the non-UI code.
    command = [sys.executable, "--probe-qt"] if getattr(sys, "frozen", False) else \
        [sys.executable, "-m", "magi_desktop.cli", "--probe-qt"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("qt", "WARN", f"could not probe PySide6: {exc}")
    if result.returncode == 0:
        return Check("qt", "OK", f"PySide6 {result.stdout.strip()}")
    reason = (result.stderr.strip().splitlines() or ["unknown error"])[-1]
    return Check("qt", "WARN", f"PySide6 does not load ({reason}); the CLI works, the app will not start")


def collector_checks(data_dir: Path | None, database_sound: bool = True) -> list[Check]:
    """A WARN for each enabled collector that needs the user — quarantined, unavailable, a source failing — in
    the health's words (the reason and the fix), from the statuses the memory keeps, so the doctor says what
    the app and `magi status` say; a plugin that did not load; a collectors.json no collector can run with."""
    from .collectors import SettingsError, load_plugins, load_settings
    from .collectors.health import describe, troubles
    from .core.paths import database_path

    db_path = database_path(data_dir)
    try:
        enabled = load_settings(db_path.parent).enabled
    except SettingsError as exc:
        return [Check("collectors", "WARN", f"{exc}; no collector runs until it is fixed")]
    plugins = load_plugins()
    checks = [Check(f"plugin {name}", "WARN", f"not loaded: {error}") for name, error in plugins.errors.items()]
    if not enabled:
        return checks + [Check("collectors", "OK", "none enabled (Settings → Collectors, or collectors.json)")]
    registered = {c.name for c in plugins.collectors()}
    statuses: dict | None = {}
    if not database_sound:      # opening it would go through what just failed (and would fix modes as it opens)
        checks.append(Check("collectors", "WARN", "their health is not checked until the database is sound"))
        statuses = None
    elif db_path.exists():
        from .core import Memory

        try:
            with Memory.open(data_dir) as memory:
                statuses = memory.collector_statuses()
        except Exception as exc:  # noqa: BLE001 - a busy or unreadable memory: say so, the other checks stand
            checks.append(Check("collectors", "WARN", f"cannot read their health: {exc}"))
            statuses = None
    for name in sorted(enabled):
        if name not in registered:
            checks.append(Check(f"collector {name}", "WARN", "enabled in collectors.json but no plugin registers "
                                                             "it (`magi plugins` lists them)"))
            continue
        if statuses is None:
            continue
        status = statuses.get(name) or {"name": name}
        trouble = troubles(status)
        detail = "; ".join(trouble or describe(status)[:1])
        checks.append(Check(f"collector {name}", "WARN" if trouble else "OK", detail))
    return checks


def run_checks(data_dir: Path | None = None) -> list[Check]:
    python_ok = sys.version_info >= (3, 10)
    checks = [Check("python", "OK" if python_ok else "FAIL", sys.version.split()[0])]
    checks += _sqlite_checks()
    checks.append(_segmentation_check())
    checks.append(_model_check())
    data = _data_checks(data_dir)
    checks += data
    checks += collector_checks(data_dir, database_sound=not any(c.name == "database" and c.status == "FAIL"
                                                                 for c in data))
    checks.append(_qt_check())
    return checks
