"""The memory core: pure Python over SQLite. Never imports Qt."""

from .async_memory import AsyncMemory
from .contracts import IngestResult, MemoryEvent, PayloadError
from .errors import DatabaseCorrupt, DiskFull, InvalidInput, MagiError, MemoryBusy, MemoryUnavailable
from .l2.beliefs import Belief
from .l2.review import ReviewError
from .memory import Memory
from .outbound import safe_text
from .remember import RememberRejected
from .reports import DueReport, MemoryStats, PendingReport, QueueState
from .retrieval import EvidencePack, Finding, Layer, PackStatus, QueryMode
from .services.storage import list_backups, restore_backup

__all__ = ["AsyncMemory", "Belief", "DatabaseCorrupt", "DiskFull", "DueReport", "EvidencePack", "Finding",
           "IngestResult", "InvalidInput", "Layer", "MagiError", "Memory", "MemoryBusy", "MemoryEvent", "MemoryStats",
           "MemoryUnavailable", "PackStatus", "PayloadError", "PendingReport", "QueryMode", "QueueState",
           "RememberRejected", "ReviewError", "list_backups", "restore_backup", "safe_text"]
