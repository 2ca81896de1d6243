"""The memory core: pure Python over SQLite. Never imports Qt."""

from .contracts import IngestResult, MemoryEvent, PayloadError
from .memory import Memory, MemoryUnavailable
from .retrieval import EvidencePack, Finding

__all__ = ["Memory", "MemoryUnavailable", "IngestResult", "MemoryEvent", "PayloadError", "EvidencePack", "Finding"]
