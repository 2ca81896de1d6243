"""Testing a plugin without a running host: a fake context, a run helper and the payload checker.

    from magi_desktop.plugin_api.testing import run

    def test_each_bookmark_is_an_activity(tmp_path):
        export = tmp_path / "bookmarks.html"
        export.write_text('<DT><A HREF="https://a.example/" ADD_DATE="1700000000">A</A>')
        result = run(Bookmarks(), settings={"files": [str(export)]})
        assert [p["provenance"]["url"] for p in result.payloads] == ["https://a.example/"]
        assert result.sources[str(export)].state == "read"
        assert run(Bookmarks(), since=result.next_since, settings=...).payloads == []

:func:`run` calls ``collect`` as the host does and checks every payload with the host's own rules
(:func:`check_payload`); :class:`FakeContext` is the ``ctx`` it passes, usable alone to drive ``collect`` step by
step. Both are as strict as the host where the host is strict — a cursor that is not JSON fails at once, the
cursor comes back as JSON gives it back (a tuple as a list), exclusions match as the host matches them, the scratch
folder is gone after the run — so a plugin that passes here behaves the same under ``magi collect``.
``PAYLOAD_SCHEMA`` is the payload contract as a JSON Schema (draft 2020-12) for tools that want one.

This module belongs to the plugin API; the host's checks it runs are imported when first used, so importing it
loads no more than ``magi_desktop.plugin_api`` does.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from . import Collector, Unavailable

if TYPE_CHECKING:
    from ..collectors.runs import RunTimes

__all__ = ["PAYLOAD_SCHEMA", "FakeContext", "PayloadRejected", "RunResult", "SourceReport", "check_payload", "run"]

#: The sensor payload contract as a JSON Schema (draft 2020-12): ``payload.schema.json`` beside this module.
PAYLOAD_SCHEMA: dict[str, Any] = json.loads(
    resources.files(__package__).joinpath("payload.schema.json").read_text("utf-8"))


class PayloadRejected(ValueError):
    """The host would reject this payload: ``field`` names the bad field (dotted, as the core names it), ``reason``
    says why, ``index`` is its position in the run when :func:`run` found it."""

    def __init__(self, field: str, reason: str, index: int | None = None):
        self.field, self.reason, self.index = field, reason, index
        super().__init__(f"{field}: {reason}" if index is None else f"payload {index}: {field}: {reason}")


def check_payload(payload: Any, source_types: Iterable[str] | None = None) -> None:
    """Raise :class:`PayloadRejected` when the host would reject ``payload`` from a collector: one that speaks (a
    chat turn, a tool run), names a source type not in ``source_types`` (when given), or fails the core's
    validation (``magi_desktop.core.contracts.validate_payload``, the check every stored payload passes)."""
    from ..collectors.screening import refusal
    from ..core.contracts import PayloadError, validate_payload

    refused = refusal(payload, source_types)
    if refused is not None:
        raise PayloadRejected(refused.field, refused.reason)
    try:
        validate_payload(payload)
    except PayloadError as exc:
        raise PayloadRejected(exc.field, exc.reason) from None


class SourceReport(NamedTuple):
    """What a collector said of one source: ``state`` is "read" (``ctx.source``), "unavailable" or "failing"."""

    state: str
    reason: str | None = None
    fix: str | None = None


class FakeContext:
    """A :class:`~magi_desktop.plugin_api.CollectContext` that records what the collector did with it.

    ``settings`` are the collector's settings as collectors.json gives them; ``exclusions`` the user's lists
    (``{"domains": ["bank.example"], "apps": [...], "repositories": [...], "paths": [...]}``). Set ``stopping``
    to True to see that a long loop stops. ``temp_dir`` is made on first use and removed by :meth:`finish`
    (which :func:`run` calls, as the host removes it when the run ends).
    """

    def __init__(self, settings: Mapping[str, Any] | None = None,
                 exclusions: Mapping[str, Iterable[str]] | None = None, *, temp_dir: str | Path | None = None,
                 name: str = "test"):
        from ..collectors.screening import exclusion_forms
        from ..collectors.status import CollectorStatus

        self.name = name
        self.settings: Mapping[str, Any] = dict(settings or {})
        self._exclusions = {kind: exclusion_forms(kind, list(values)) for kind, values in (exclusions or {}).items()}
        self.stopping = False
        self.cursor: Any = None                           # the last saved cursor, as the next run's ``since``
        self.cursors: list[Any] = []                      # every saved cursor, in order
        self.progressed: list[tuple[int, int | None]] = []
        self._status = CollectorStatus(name)             # counts skips by the reason codes the host shows
        self.skips: Counter[str] = self._status.skipped
        self.details: list[tuple[str, str | None]] = []   # (reason code, detail) of each skip, in order
        self.current: str | None = None                   # the source named last
        self.sources: dict[str, SourceReport] = {}
        self._temp_dir = Path(temp_dir) if temp_dir is not None else None
        self._made_temp = False

    def excluded(self, kind: str, value: str) -> bool:
        lowered = value.casefold()
        return any(item in lowered for item in self._exclusions.get(kind, ()))

    def save_cursor(self, value: Any) -> None:
        from ..collectors.runs import check_cursor

        self.cursor = check_cursor(self.name, value)       # the memory keeps JSON: a tuple comes back a list
        self.cursors.append(self.cursor)

    def progress(self, done: int, total: int | None = None) -> None:
        self.progressed.append((done, total))

    def source(self, name: str) -> None:
        self.current = name
        self.sources.setdefault(name, SourceReport("read"))

    def unavailable(self, source: str, reason: str, fix: str | None = None) -> None:
        self.sources[source] = SourceReport("unavailable", reason, fix)

    def failing(self, source: str, error: str) -> None:
        self.sources[source] = SourceReport("failing", error)

    def skipped(self, reason: str, detail: str | None = None) -> None:
        self.details.append((self._status.skip(reason, detail), detail))

    @property
    def temp_dir(self) -> Path:
        if self._temp_dir is None:
            self._temp_dir = Path(tempfile.mkdtemp(prefix=f"magi-{self.name}-"))
            self._made_temp = True
            weakref.finalize(self, shutil.rmtree, self._temp_dir, True)   # a context dropped without finish()
        return self._temp_dir

    def finish(self) -> None:
        """The run ended: its scratch folder goes (one passed in as ``temp_dir`` is the caller's and stays)."""
        if self._made_temp and self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir, self._made_temp = None, False


@dataclass
class RunResult:
    """What one run did: what it yielded (``payloads``), what the host would drop as mentioning an exclusion
    (``excluded``), whether ``max_per_run`` cut it, what it said of its sources, its skips and cursor, and
    ``next_since`` — the cursor the host would start the next run from."""

    payloads: list[dict[str, Any]]
    context: FakeContext
    next_since: Any
    cut: bool = False
    excluded: int = 0
    unavailable: Unavailable | None = None
    per_source: Counter[str] = field(default_factory=Counter)   # payloads by the source named when yielded

    @property
    def cursor(self) -> Any:
        return self.context.cursor

    @property
    def sources(self) -> dict[str, SourceReport]:
        return self.context.sources

    @property
    def skips(self) -> Counter[str]:
        return self.context.skips


def run(collector: Collector, since: Any = None, settings: Mapping[str, Any] | None = None, *,
        exclusions: Mapping[str, Iterable[str]] | None = None, max_per_run: int | None = None,
        check: bool = True) -> RunResult:
    """Run ``collector.collect(since, ctx)`` to its end as the host does, with a :class:`FakeContext`.

    Each payload is checked with :func:`check_payload` (``check=False`` keeps bad ones, to test them);
    the first bad one raises :class:`PayloadRejected` with its position. ``Unavailable`` ends the run as in the
    host, without failing: it is in ``result.unavailable``. Any other exception is the collector's bug and
    propagates. ``max_per_run`` cuts the run where the host would (it allows 50,000), to test that a long
    back-fill goes on from ``result.next_since``.
    """
    from ..collectors.runs import RunTimes, close_run
    from ..collectors.screening import mentions_any
    from ..collectors.settings import unset_required, with_defaults
    from ..core.contracts import parse_timestamp

    # The settings a run sees, as the host gives them: the user's over the declared defaults.
    ctx = FakeContext(with_defaults(collector, settings or {}), exclusions, name=collector.name)
    needles = [v for kind in ("domains", "paths") for v in ctx._exclusions.get(kind, ())]
    source_types = (collector.source_type, *getattr(collector, "source_types", ()))
    payloads: list[dict[str, Any]] = []
    per_source: Counter[str] = Counter()
    times = RunTimes()
    cut, excluded, unavailable = False, 0, None
    newest: float | None = None                 # of what the host would store
    generator = None
    try:
        unset = unset_required(collector, ctx.settings)
        if unset is not None:      # the host does not call collect: unavailable until the user sets it
            raise unset
        generator = collector.collect(since, ctx)
        for payload in generator:
            if max_per_run is not None and len(payloads) + excluded >= max_per_run:
                cut = True
                break
            try:
                check_payload(payload, source_types)
                valid = True
            except PayloadRejected as exc:
                if check:
                    raise PayloadRejected(exc.field, exc.reason, len(payloads) + excluded) from None
                valid = False          # kept, to be looked at: the host would count it as rejected
            times.see(payload)
            if needles and mentions_any(payload, needles):
                excluded += 1          # the host's safety net drops it; the collector could have skipped it
                continue
            payloads.append(payload)
            per_source[ctx.current or collector.name] += 1
            if valid:
                at = parse_timestamp(payload.get("occurred_at") or payload["schedule"]["start"])
                newest = at if newest is None else max(newest, at)
    except Unavailable as exc:
        unavailable = exc
    finally:
        close_run(generator)
        ctx.finish()
    next_since = _next_since(ctx, since, times, newest, cut, unavailable)
    return RunResult(payloads=payloads, context=ctx, next_since=next_since, cut=cut, excluded=excluded,
                     unavailable=unavailable, per_source=per_source)


def _next_since(ctx: FakeContext, since: Any, times: RunTimes, newest: float | None, cut: bool,
                unavailable: Unavailable | None) -> Any:
    """The cursor the host keeps (supervisor ``_store_cursor``): the collector's own when it saved one this run;
    else, for a time cursor, the newest time a complete run stored, or where a cut run read in time order goes
    on. A collector that keeps its own cursor should save it every run: the host does not mix the two."""
    if ctx.cursors:
        return ctx.cursor
    if since is not None and (isinstance(since, bool) or not isinstance(since, (int, float))):
        return since               # a cursor of the collector's own making is never replaced by a time
    if cut:
        point = times.resume_point()
        return point if point is not None and (since is None or point > since) else since
    if unavailable is None and newest is not None:
        return newest
    return since
