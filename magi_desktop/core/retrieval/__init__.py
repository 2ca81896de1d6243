"""Retrieval (architecture §5): query modes, recall paths, fusion, rerank, evidence packs."""

from .engine import Retriever
from .modes import MODES, classify_mode
from .pack import EvidencePack, Finding
from .temporal import parse_temporal

__all__ = ["Retriever", "EvidencePack", "Finding", "MODES", "classify_mode", "parse_temporal"]
