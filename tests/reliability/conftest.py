"""Hypothesis profiles for the fuzz tests, and the per-entry-point case counts.

The number of cases per property comes from ``MAGI_FUZZ_EXAMPLES`` (default 40, enough for CI to
exercise every strategy in well under a minute); ``benchmarks/fuzz.py`` runs the same properties
with 10,000 each. Hypothesis keeps no example database (nothing is written into the repository);
the CI profile is derandomised so a run is reproducible, the benchmark's is not, so each run
explores new inputs.
"""

import json
import os

from hypothesis import HealthCheck, settings

from .fuzzing import CASES

_SUPPRESSED = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
               HealthCheck.function_scoped_fixture]
settings.register_profile("ci", max_examples=int(os.environ.get("MAGI_FUZZ_EXAMPLES", "40")), deadline=None,
                          database=None, derandomize=True, suppress_health_check=_SUPPRESSED, print_blob=True)
settings.register_profile("fuzz", max_examples=int(os.environ.get("MAGI_FUZZ_EXAMPLES", "10000")), deadline=None,
                          database=None, derandomize=False, suppress_health_check=_SUPPRESSED, print_blob=True)
settings.load_profile(os.environ.get("MAGI_FUZZ_PROFILE", "ci"))


def pytest_sessionfinish(session, exitstatus):
    """``MAGI_FUZZ_REPORT=FILE`` (set by benchmarks/fuzz.py): write how many cases each entry point ran."""
    report = os.environ.get("MAGI_FUZZ_REPORT")
    if report:
        with open(report, "w", encoding="utf-8") as handle:
            json.dump(dict(sorted(CASES.items())), handle)


def pytest_configure(config):
    config.addinivalue_line("markers", "fuzz: property-based fuzzing (cases per property: MAGI_FUZZ_EXAMPLES)")
