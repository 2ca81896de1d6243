"""The house rules of architecture §2: the core and workers never import Qt."""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "magi_desktop"


def test_core_and_workers_run_without_loading_pyside6():
    code = (
        "import sys, tempfile\n"
        "import magi_desktop.core, magi_desktop.workers, magi_desktop.cli, magi_desktop.doctor\n"
        "import magi_desktop.agents.mcp_server, magi_desktop.agents.registration\n"
        "from magi_desktop.core import Memory\n"
        "m = Memory.open(tempfile.mkdtemp(), embedder='hashing')\n"
        "m.ingest({'source_type': 'chat', 'session_id': 's', 'occurred_at': 1.7e9,"
        " 'chat': {'role': 'user', 'text': 'I have a cat', 'provenance': 'human_input'}})\n"
        "m.process_pending(); m.stats(); m.close()\n"
        "loaded = sorted(n for n in sys.modules if n.split('.')[0] in ('PySide6', 'shiboken6'))\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_only_the_ui_package_imports_qt():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if "ui" in path.relative_to(PACKAGE).parts[:1]:
            continue
        if any(name.split(".")[0] in ("PySide6", "shiboken6") for name in _imports(path)):
            offenders.append(str(path.relative_to(PACKAGE)))
    assert offenders == []


def test_only_the_agents_package_imports_the_mcp_sdk():
    offenders = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                 if "agents" not in p.relative_to(PACKAGE).parts[:1]
                 and any(name.split(".")[0] in ("mcp", "mcp_types") for name in _imports(p))]
    assert offenders == []


def test_inside_ui_only_qt_py_imports_pyside6():
    offenders = [str(p.name) for p in (PACKAGE / "ui").rglob("*.py")
                 if p.name != "qt.py" and any(n.startswith("PySide6") for n in _imports(p))]
    assert offenders == []
