"""The memory core: pure Python over SQLite. Never imports Qt."""

from .contracts import IngestResult, MemoryEvent, PayloadError
from .errors import DatabaseCorrupt, DiskFull, MemoryBusy
from .l2.beliefs import Belief
from .l2.review import ReviewError
from .memory import Memory, MemoryUnavailable
from .memory_backup import list_backups, restore_backup
from .outbound import safe_text
from .remember import RememberRejected
from .retrieval import EvidencePack, Finding

__all__ = ["Belief", "DatabaseCorrupt", "DiskFull", "EvidencePack", "Finding", "IngestResult", "Memory", "MemoryBusy",
           "MemoryEvent", "MemoryUnavailable", "PayloadError", "RememberRejected", "ReviewError", "list_backups",
           "restore_backup", "safe_text"]
