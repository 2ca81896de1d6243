"""Retrieval (architecture §5): query modes, recall paths, fusion, rerank, evidence packs."""

from .engine import Retriever
from .modes import MODES, QueryMode, classify_mode
from .pack import EvidencePack, Finding, Layer, PackStatus
from .temporal import parse_temporal

__all__ = ["Retriever", "EvidencePack", "Finding", "Layer", "MODES", "PackStatus", "QueryMode", "classify_mode",
           "parse_temporal"]
