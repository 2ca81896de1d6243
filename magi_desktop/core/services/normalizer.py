"""The payload → stored-event step that ingest, the review's corrections and the import share (architecture §3).

It owns the memory's dedupe secret, which an import replaces with the exported memory's (so the dedupe
keys of the imported events match), hence one shared object rather than copies of the secret.
"""

from __future__ import annotations

import logging
from typing import Any

from ..contracts import MemoryEvent, PayloadError, validate_payload
from ..ingest import normalize
from ..redact import CURRENT, RuleSet
from ..render import TemplateRegistry

log = logging.getLogger(__name__)


class Normalizer:
    def __init__(self, templates: TemplateRegistry, *, user_id: str, key_secret: bytes,
                 rules: RuleSet = CURRENT) -> None:
        self.templates = templates
        self.user_id = user_id
        self.key_secret = key_secret
        self.rules = rules

    def adopt_secret(self, key_secret: bytes) -> None:
        """Dedupe with this secret from now on: an import brings the exported memory's, so its keys match."""
        self.key_secret = key_secret

    def __call__(self, raw: Any, now: float) -> tuple[MemoryEvent, str]:
        """Validate and normalise one payload: (the event, where it goes). Raises :class:`PayloadError`."""
        payload = validate_payload(raw)
        try:
            return normalize(payload, self.templates, user_id=self.user_id, key_secret=self.key_secret, now=now,
                             rules=self.rules)
        except Exception as exc:  # one odd payload must not sink its batch
            # A payload that passed validation but broke normalisation is a bug
            # here, not the sender's fault: log it with its traceback, reject it.
            log.exception("could not normalise a valid payload from %s", payload.source_type)
            raise PayloadError("payload", f"could not be processed ({type(exc).__name__}); "
                                          "this is a bug in Magi Desktop, please report it") from exc
