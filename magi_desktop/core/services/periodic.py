"""The periodic jobs (architecture §6, §7, §14): L2 maintenance and the end of idle sessions, the L3 windows a
moment closes and the rule-made insights, and the daily backup — each idempotent, run by a scheduler (the
app's, each on its own period) or in a row by a test or a replay with successive ``now``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from .. import l2, l3
from ..errors import InvalidInput
from ..l0 import WorkingMemory
from ..l2 import jobs as l2_jobs
from ..llm import LLMProvider
from ..reports import DueReport
from ..store import Database, tiers
from ..store.entities import EntityLinker
from .forgetting import Forgetting
from .storage import Storage

PERIODIC_JOBS = ("maintenance", "l3:hour", "l3:day", "l3:week", "l3:month", "l3:insights", "tiers", "backup")


class PeriodicJobs:
    def __init__(self, db: Database, llm: LLMProvider, *, lock: threading.Lock, linker: EntityLinker,
                 l0: WorkingMemory, storage: Storage, forgetting: Forgetting, notify: Callable[[], None]) -> None:
        self.db = db
        self.llm = llm
        self.lock = lock                # the process lock: no background batch meanwhile
        self.linker = linker            # its cache is dropped: maintenance may merge or drop entities
        self.l0 = l0                    # idle sessions end
        self.storage = storage          # the daily backup
        self.forgetting = forgetting    # a forget left unfinished is finished
        self.notify = notify            # new L3 summaries wait to be embedded

    def run_due(self, now: float | None = None, jobs: Iterable[str] | None = None) -> DueReport:
        """Run every periodic job due at ``now``, synchronously and idempotently: L2 maintenance (TTL expiry,
        episodes, entity merges, orphans) and the end of idle sessions (``maintenance``), the L3 windows
        closed by ``now`` (``l3:hour``, ``l3:day``, ``l3:week``, ``l3:month``) and the rule-made insights
        (``l3:insights``), old summarised events moved to the cold tier (``tiers``, after L3: an event goes
        cold only once a summary covers it), and the daily backup (``backup``, by the real clock). ``jobs``
        picks some (the app's scheduler runs each on its own schedule); None runs them all, which is how a test
        or a benchmark replays a month with successive ``now``."""
        chosen = set(PERIODIC_JOBS if jobs is None else jobs)
        unknown = chosen - set(PERIODIC_JOBS)
        if unknown:
            raise InvalidInput(f"unknown periodic job(s) {', '.join(sorted(unknown))}; jobs are "
                             f"{', '.join(PERIODIC_JOBS)}")
        backup = self.storage.backup_if_due() if "backup" in chosen else None
        # Outside the process lock: the forget's chunks take it each.
        forget = self.forgetting.resume_forget() if "maintenance" in chosen else None
        maintenance = sessions_ended = summaries = None
        with self.lock:
            try:
                if "maintenance" in chosen:
                    # A job still marked running past its lease was left by a crash: due again.
                    recovered = l2_jobs.recover_running(self.db)     # leases are in real time
                    maintenance = l2.maintain(self.db, now) | {"jobs_recovered": recovered}
                    sessions_ended = self.l0.expire(time.time() if now is None else now)
                granularities = tuple(g for g in l3.GRANULARITIES if f"l3:{g}" in chosen)
                if granularities or "l3:insights" in chosen:
                    summaries = l3.run(self.db, self.llm, now, granularities=granularities,
                                       insights="l3:insights" in chosen)
                tiering = tiers.run(self.db, now).to_dict() if "tiers" in chosen else None
                report = DueReport(backup=backup, forget=forget, l2_maintenance=maintenance,
                                   l0_sessions_ended=sessions_ended, l3=summaries, tiers=tiering)
                if report.new_summaries:
                    self.notify()          # new summaries to embed
                return report
            finally:
                self.linker.reset()   # maintenance may have merged or dropped entities it cached
