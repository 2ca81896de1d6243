"""SIGKILL during mixed work — ingest, L2 projection and the other queues, summaries, ended sessions,
backups — then reopen: nothing acknowledged lost, no duplicates after replaying the source, the file
intact, the queues resumed (crashing.py says how). benchmarks/faults.py runs twenty of these."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))      # crashing.py, shared with the worker and the benchmark

from crashing import crash_run

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="needs SIGKILL")]


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_sigkill_during_mixed_work_loses_nothing_and_the_queues_resume(tmp_path, seed):
    run = crash_run(tmp_path, seed, total=900, kills=2, max_lines=200)
    assert run["problems"] == []
    assert run["integrity_ok"] and run["resume_ok"]
    assert run["lost"] == 0 and run["duplicates"] == 0
    assert run["acked"] > 0 and all(during != "finished before the kill" for during in run["killed_during"])
