"""How one MCP tool call ends: an answer, a refusal the agent can act on, or a bug.

A refused call — a bad argument (whether the SDK's schema check or the memory caught it), an invalid
payload, a quote that fails the gate, a busy memory — is a tool execution error (``isError``) whose
``structuredContent`` is a :class:`~.schemas.Refusal`: ``error`` (a code), ``message`` (what to send instead)
and ``field`` when one argument is at fault; its text says the same, so the model can correct itself.
Anything else that escapes a call is a bug, which the SDK reports as ``Error executing tool …`` with the
traceback in the server's log.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from ..core import InvalidInput, MemoryBusy, MemoryUnavailable, PayloadError, RememberRejected
from ..core.contracts import parse_timestamp
from ..core.outbound import safe, safe_text
from ..core.store.connection import OperationalError, is_busy

log = logging.getLogger(__name__)

# What a call that failed on a bug is counted as (Settings → Agents): not the caller's fault, but not a success.
INTERNAL_ERROR = "internal_error"


class Refused(Exception):
    """A call the memory refused: ``code`` for the usage record and the agent, ``message`` says what to do."""

    def __init__(self, code: str, message: str, **data: Any):
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data = code, message, data


def result(text: str, data: Mapping[str, Any]) -> CallToolResult:
    """A tool's answer: ``text`` as built (a recalled block is already safe; see output.py), ``data`` made
    safe here — no string in it can carry a recalled-memory marker or a control character."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=safe(dict(data)))


def refusal(refused: Refused) -> CallToolResult:
    data = {"error": refused.code, "message": refused.message, **refused.data}
    said = safe_text(f"Refused ({refused.code}): {refused.message}")      # it may quote the bad argument
    return CallToolResult(content=[TextContent(type="text", text=said)], structured_content=safe(data),
                          is_error=True)


def refused_for(exc: BaseException, tool: str) -> tuple[CallToolResult, str | None] | None:
    """The refusal an exception out of a call stands for, and what the usage record counts it as (None: not
    a rejection of the caller's input, like a busy memory); None when the exception is a bug."""
    if isinstance(exc, Refused):
        return refusal(exc), exc.code
    if isinstance(exc, PayloadError):
        return refusal(Refused("invalid_payload", str(exc), field=exc.field)), exc.field
    if isinstance(exc, RememberRejected):
        return refusal(Refused(exc.reason, str(exc).split(": ", 1)[-1], rejected=True)), exc.reason
    if isinstance(exc, InvalidInput):   # a plain ValueError is a bug, not the caller's argument: it propagates
        return refusal(Refused("invalid_argument", str(exc))), "invalid_argument"
    if isinstance(exc, MemoryBusy) or isinstance(exc, OperationalError) and is_busy(exc):
        log.warning("%s failed: %s", tool, exc)       # the write lock stayed taken past the patience
        return refusal(Refused("busy", "the memory is busy (another program holds its write lock); nothing was "
                                       "stored, call again")), None
    if isinstance(exc, MemoryUnavailable):          # the environment (a full disk…), not the call: said as is
        log.warning("%s failed: %s", tool, exc)
        return refusal(Refused("memory_unavailable", str(exc))), "memory_unavailable"
    return None


def _expected(prop: Mapping[str, Any]) -> str:
    """What an argument's JSON Schema asks for, in words."""
    if "enum" in prop:
        return "one of " + ", ".join(repr(v) for v in prop["enum"])
    if "const" in prop:
        return repr(prop["const"])
    options = prop.get("anyOf") or prop.get("oneOf")
    if options:
        return " or ".join(_expected(option) for option in options)
    kind = prop.get("type")
    words = {"string": "text", "integer": "a whole number", "number": "a number", "boolean": "true or false",
             "array": "a list", "object": "an object", "null": "null"}
    said = words.get(kind, str(kind)) if kind else "a value"
    if kind == "array" and isinstance(prop.get("items"), Mapping):
        said += " of " + _expected(prop["items"])
    bounds = [f"{word} {prop[key]}" for key, word in (("minimum", "at least"), ("maximum", "at most"))
              if key in prop]
    return said + (f" ({', '.join(bounds)})" if bounds else "")


def schema_refusal(error: ValidationError, schema: Mapping[str, Any] | None) -> Refused:
    """The refusal for arguments that failed the tool's input schema: the first field at fault and what to send
    — never the rejected value (the caller's data) nor pydantic's text and links."""
    properties = (schema or {}).get("properties", {})
    problems = []
    for err in error.errors(include_url=False, include_input=False):
        loc = [str(part) for part in err["loc"]]
        field = loc[0] if loc else ""
        if err["type"] == "missing":
            problems.append((field, "required"))
        elif err["type"] == "extra_forbidden":
            problems.append((field, "not an argument of this tool"))
        else:
            msg = err["msg"].rstrip(".")
            problems.append((".".join(loc), msg[:1].lower() + msg[1:]))
    field, problem = problems[0] if problems else ("", "is invalid")
    top = field.split(".", 1)[0]
    wanted = f"; send {_expected(properties[top])}" if top in properties else ""
    more = f" ({len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    return Refused("invalid_argument", f"{field}: {problem}{wanted}{more}", field=field)


def client_of(ctx: Context | None) -> str | None:
    """The MCP client's name from its initialize request (``clientInfo.name``)."""
    try:
        params = ctx.session.client_params if ctx is not None else None
    except (AttributeError, ValueError):
        return None
    info = getattr(params, "client_info", None)
    return getattr(info, "name", None)


def as_of(now: float | str | None, field: str = "now") -> tuple[float | None, Any]:
    """(UNIX seconds, the asker's timezone) from ``now``: seconds, or ISO-8601 with an offset."""
    if now is None:
        return None, None
    if isinstance(now, str) and re.fullmatch(r"\d+(?:\.\d*)?", now.strip(), re.ASCII):
        now = float(now)                            # UNIX seconds sent as a string ("²" is no digit here)
    try:
        ts = parse_timestamp(now, field)
    except PayloadError as exc:
        raise Refused("invalid_argument", f"{exc}; give {field} as ISO-8601 with an offset "
                                          "(2026-11-30T12:00:00+08:00) or UNIX seconds", field=field) from None
    tz = datetime.fromisoformat(now.strip().replace("Z", "+00:00")).tzinfo if isinstance(now, str) else None
    return ts, tz
