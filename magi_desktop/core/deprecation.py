"""``user_id`` is deprecated: one memory is one person.

A memory never kept people apart — ``Memory.open(user_id="bob")`` answered from everything stored, whoever it was
stored for — so the name promised a separation that does not exist. People who share a machine each use their own
data folder. This release accepts a ``user_id`` other than the default with a :class:`DeprecationWarning` and stores
it as before; the next one refuses it.
"""

from __future__ import annotations

import sys
import warnings

DEFAULT_USER_ID = "local"      # what every event is stored for when no user_id is given

USER_ID_DEPRECATED = ("one memory is one person: user_id is deprecated and will be refused in the next release; "
                      "people who share a machine use separate data folders (Memory.open(path), --data-dir, "
                      "MAGI_DATA_DIR)")


def warn_user_id(where: str) -> None:
    """Warn that ``where`` (``Memory.open(user_id=...)``, a payload's ``user_id``…) was given a user other than the
    default, pointing the warning at the first caller outside this package."""
    warnings.warn(f"{where}: {USER_ID_DEPRECATED}", DeprecationWarning, stacklevel=_outside_the_package())


def _outside_the_package() -> int:
    """The ``stacklevel`` of the nearest frame not in ``magi_desktop``: the code that called the memory, however
    many of its own calls lie between (``Memory.ingest`` → ``Ingestion.ingest_many`` → here)."""
    frame, level = sys._getframe(1), 1      # warn_user_id's frame is stacklevel 1
    while frame.f_back is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "magi_desktop":
        frame, level = frame.f_back, level + 1
    return level
