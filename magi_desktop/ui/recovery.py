"""Opening the memory at start, and what the user sees when it cannot be opened (architecture §11, §14).

Opening writes only when the database needs it (a migration, an interrupted forget); if another program
holds the write lock meanwhile, a progress dialog says so while the app waits for its turn.

A damaged database gets a dialog offering the newest sound automatic backup (the damaged file is
moved aside until the next forget); any other reason the memory cannot open (permissions, a newer schema,
a full disk) is said plainly in a message box — a desktop launch has no terminal to print to.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..core import DatabaseCorrupt, Memory, MemoryUnavailable, restore_backup
from ..core.store import backup as backups
from .qt import QApplication, QMessageBox, QProgressDialog, QThread, QWidget

log = logging.getLogger(__name__)


class RestoreDialog(QMessageBox):
    """"The memory database … is damaged. Restore the backup of <when>?" — Restore / Quit."""

    def __init__(self, error: DatabaseCorrupt, choice: backups.Backup | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.error, self.choice = error, choice
        self.setWindowTitle("Magi Desktop — the memory is damaged")
        self.setIcon(QMessageBox.Icon.Critical)
        self.setText(f"The memory database {error.path} is damaged and cannot be used.\n\n({error.detail})")
        if choice is None:
            self.setInformativeText("There is no sound automatic backup to restore. Keep a copy of the file; "
                                    f"`sqlite3 {error.path.name} .recover` may rescue part of it.")
            self.restore_button = None
            self.quit_button = self.addButton("Quit", QMessageBox.ButtonRole.RejectRole)
        else:
            self.setInformativeText(
                f"Restore the automatic backup of {choice.label}? What was stored after it is lost; collectors "
                "read their sources again from that point. The damaged file is kept beside it "
                f"({error.path.name}.replaced-…) until something is forgotten (it holds everything).")
            self.restore_button = self.addButton("Restore backup", QMessageBox.ButtonRole.AcceptRole)
            self.quit_button = self.addButton("Quit", QMessageBox.ButtonRole.RejectRole)
            self.setDefaultButton(self.restore_button)

    @property
    def restore_chosen(self) -> bool:
        return self.restore_button is not None and self.clickedButton() is self.restore_button

    @property
    def chosen_backup(self) -> backups.Backup | None:
        """The backup to restore: the one offered, if the user chose to restore it."""
        return self.choice if self.restore_chosen else None


def newest_sound_backup(db_path: Path) -> backups.Backup | None:
    """The newest backup that passes the integrity check (damaged ones are skipped)."""
    for candidate in backups.list_backups(db_path):
        if backups.verify(candidate.path) is None:
            return candidate
        log.warning("backup %s is damaged; trying an older one", candidate.path)
    return None


class LockWaitDialog:
    """A ``lock_wait`` callback: from the first second of waiting for another program's write lock, a busy
    progress dialog on the GUI thread ("Waiting for another program…"); writes from worker threads only log."""

    def __init__(self, parent: QWidget | None = None):
        self.parent = parent
        self.dialog: QProgressDialog | None = None
        self.last_wait = 0.0

    def __call__(self, waited: float, acquired: bool) -> None:
        self.last_wait = waited
        app = QApplication.instance()
        if app is None or QThread.currentThread() is not app.thread():
            if acquired and waited >= 1:
                log.info("a write waited %.1f s for another program's write lock", waited)
            return
        if acquired:
            self.close()
            return
        if waited < 1:
            return
        if self.dialog is None:
            self.dialog = QProgressDialog("", "", 0, 0, self.parent)
            self.dialog.setWindowTitle("Magi Desktop")
            self.dialog.setCancelButton(None)
            self.dialog.setMinimumDuration(0)
        self.dialog.setLabelText(f"Waiting for another program that is writing to the memory ({waited:.0f} s)…")
        self.dialog.show()
        app.processEvents()

    def close(self) -> None:
        if self.dialog is not None:
            self.dialog.close()
            self.dialog = None


def open_memory(data_dir: Path | None, llm: Any, parent: QWidget | None = None) -> Memory | None:
    """``Memory.open``; when the database is damaged, offer the restore; None when the app cannot start
    (the user declined, or the reason was shown)."""
    waiting = LockWaitDialog(parent)
    try:
        return _open(data_dir, llm, parent, waiting)
    finally:
        waiting.close()


def _open(data_dir: Path | None, llm: Any, parent: QWidget | None, waiting: LockWaitDialog) -> Memory | None:
    try:
        return Memory.open(data_dir, llm=llm, lock_wait=waiting)
    except DatabaseCorrupt as exc:
        log.error("%s", exc)
        dialog = RestoreDialog(exc, newest_sound_backup(exc.path), parent)
        dialog.exec()
        chosen = dialog.chosen_backup
        if chosen is None:
            return None
        try:
            done = restore_backup(exc.path, chosen.path)
            log.warning("restored the memory from %s; the damaged file is kept as %s",
                        done["restored_from"]["path"], ", ".join(done["kept_aside"]))
            return Memory.open(data_dir, llm=llm, lock_wait=waiting)
        except MemoryUnavailable as again:
            _cannot_start(again, parent)
            return None
    except MemoryUnavailable as exc:
        waiting.close()
        _cannot_start(exc, parent)
        return None


def _cannot_start(error: MemoryUnavailable, parent: QWidget | None) -> None:
    log.error("the memory cannot be opened: %s", error)
    box = QMessageBox(QMessageBox.Icon.Critical, "Magi Desktop cannot start", str(error),
                      QMessageBox.StandardButton.Close, parent)
    box.setInformativeText("Run `magi doctor` for a full check.")
    box.exec()
