"""Aggregation before L1 (issue 20, item 3; architecture §16): high-frequency, low-value events folded into
activity blocks — :mod:`.rules` says what is folded and what a block says, :mod:`.fold` stores the blocks
beside their members (on ingest, and again after a forget)."""
