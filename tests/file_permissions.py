"""Being refused a file, for real: a test that needs "permission denied" runs its reader in a process that obeys
file permissions."""

import os
import shutil

import pytest


def without_root_powers() -> list[str]:
    """The command prefix for such a process. Root reads every file whatever its mode, so as root the reader runs
    without the capabilities that let it (setpriv, from util-linux); as anyone else, as itself."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv (util-linux): no way to be refused a file")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
