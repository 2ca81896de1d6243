"""The memory core: pure Python over SQLite. Never imports Qt."""

from .contracts import IngestResult, MemoryEvent, PayloadError
from .l2.beliefs import Belief
from .l2.review import ReviewError
from .memory import Memory, MemoryUnavailable
from .remember import RememberRejected
from .retrieval import EvidencePack, Finding

__all__ = ["Belief", "EvidencePack", "Finding", "IngestResult", "Memory", "MemoryEvent", "MemoryUnavailable",
           "PayloadError", "RememberRejected", "ReviewError"]
