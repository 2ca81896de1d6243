"""The memory core: pure Python over SQLite. Never imports Qt."""

from .contracts import IngestResult, MemoryEvent, PayloadError
from .memory import Memory

__all__ = ["Memory", "IngestResult", "MemoryEvent", "PayloadError"]
