"""The house rules of architecture §2: the core and workers never import Qt; SQL lives in core/store/;
plugins import only the plugin API; the UI and the framework integrations reach the core through Memory."""

import ast
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "magi_desktop"
PLUGINS = PACKAGE.parent / "plugins"


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


# --- SQL lives in core/store/ (issue 18, item 2) ---------------------------------------------------------------

_SQL_START = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|REPLACE|PRAGMA)\b")
_EXECUTE = ("execute", "executemany", "executescript")

def _literal_text(node: ast.AST) -> str | None:
    """A string literal's text (an f-string's placeholders as ``{}``), or None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def sql_literal_lines(source: str) -> list[int]:
    """Lines of the SQL string literals in ``source``: a literal that starts (after whitespace) with a statement
    keyword, or one passed straight to ``.execute(`` / ``.executemany(`` / ``.executescript(``."""
    tree = ast.parse(source)
    parts_of_fstrings = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    executed = {id(n.args[0]) for n in ast.walk(tree)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _EXECUTE and n.args}
    lines = []
    for node in ast.walk(tree):
        text = None if id(node) in parts_of_fstrings else _literal_text(node)
        if text is not None and (id(node) in executed or _SQL_START.match(text)):
            lines.append(node.lineno)
    return sorted(lines)


def _sql_counts(root: Path, skip: str | None = None) -> dict[str, int]:
    """How many SQL literals each file under ``root`` holds (those with any), by path relative to it; the files
    under the folder ``skip`` are not counted."""
    counts = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if skip is None or not rel.startswith(skip):
            lines = sql_literal_lines(path.read_text("utf-8"))
            if lines:
                counts[rel] = len(lines)
    return counts


def _sql_outside_the_store() -> dict[str, int]:
    return _sql_counts(PACKAGE, skip="core/store/")


def test_the_sql_detector_finds_statements_and_executed_strings_only():
    source = (
        'a = "SELECT 1"\n'
        'b = f"""\n  update t SET x = {1}"""\n'          # lower case: the house writes SQL keywords upper case
        'c = f"  DELETE FROM t WHERE id IN ({marks})"\n'
        'conn.execute("PRAGMA user_version")\n'
        'conn.executemany(SQL + "x", rows)\n'               # not a literal
        'conn.execute(f"{verb} t")\n'                       # a literal, passed to execute
        'doc = "Select the rows that matter."\n'            # prose
        'q = ("WITH r AS (SELECT 1) "\n     "SELECT * FROM r")\n'
        'd = "UPDATE_RATE"\n'                               # a word, not a statement
    )
    assert sql_literal_lines(source) == [1, 4, 5, 7, 9]


def test_no_sql_outside_the_store():
    found = _sql_outside_the_store()
    assert found == {}, ("SQL belongs in a magi_desktop/core/store/ module named for the tables it reads "
                         f"(architecture §18); these files hold SQL literals: {found}")


def _executes(source: str) -> list[int]:
    """Lines that call ``.execute(`` / ``.executemany(`` / ``.executescript(`` on anything."""
    return sorted(n.lineno for n in ast.walk(ast.parse(source))
                  if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _EXECUTE)


def test_only_the_store_runs_statements():
    # A statement built elsewhere and run there would pass the literal check; no layer calls execute at all.
    offenders = {path.relative_to(PACKAGE).as_posix(): lines for path in sorted(PACKAGE.rglob("*.py"))
                 if not path.relative_to(PACKAGE).as_posix().startswith("core/store/")
                 and (lines := _executes(path.read_text("utf-8")))}
    assert offenders == {}


def test_the_execute_detector_finds_calls_on_any_object():
    assert _executes("db.reader().execute(q)\nconn.executemany(q, rows)\nx = execute(q)\n") == [1, 2]


# --- tests use the store's functions or the public API, not raw SQL (issue 18, item 2) -----------------------------

TESTS = Path(__file__).resolve().parent

# Test files that still hold SQL string literals, with how many. What is left is legitimately raw, each file says why
# in a comment under its docstring: it builds a real-format source file (a browser's History) or a database from
# before a migration, it is about bytes on disk (integrity checks, scrubbing, crash and torn-write tests, a second
# process), or it sets up a state no API reaches. Reading through a store function lowers a count (the test then
# asks for the lower number); a new file or a higher count fails.
SQL_IN_TESTS = {
    "lock_holder.py": 6,
    "reliability/crashing.py": 2,
    "reliability/fuzzing.py": 6,
    "reliability/test_corruption.py": 5,
    "reliability/test_disk_full.py": 7,
    "reliability/test_forget_property.py": 3,
    "reliability/test_fuzz_import.py": 3,
    "reliability/test_fuzz_query.py": 1,
    "reliability/test_fuzz_remember.py": 1,
    "reliability/test_fuzz_secrets.py": 1,
    "reliability/test_fuzz_sources.py": 3,
    "reliability/test_privacy.py": 5,
    "reliability/test_reredact.py": 4,
    "test_collector_browser.py": 13,
    "test_collector_browser_hostile.py": 8,
    "test_aggregation.py": 1,
    "test_ann.py": 18,
    "test_ann_scopes.py": 4,
    "test_bounded_paths.py": 4,
    "test_crash.py": 2,
    "test_embeddings.py": 2,
    "test_export.py": 4,
    "test_extraction.py": 2,
    "test_forget.py": 4,
    "test_forget_crash.py": 3,
    "test_forget_scrub.py": 9,
    "test_import_trust.py": 2,
    "test_job_queue.py": 4,
    "test_l0.py": 1,
    "test_l2.py": 12,
    "test_l2_retrieval.py": 1,
    "test_l3.py": 5,
    "test_recalled.py": 2,
    "test_redact.py": 3,
    "test_remember.py": 1,
    "test_review.py": 1,
    "test_scheduled_events.py": 1,
    "test_store.py": 28,
    "test_store_forget_queries.py": 9,
    "test_store_helpers.py": 6,
    "test_summary_vectors.py": 9,
    "test_store_l2.py": 4,
    "test_supersede.py": 6,
    "test_tiers.py": 24,
    "test_viewer.py": 3,
    "test_workers.py": 1,
}


def test_no_new_sql_in_the_tests():
    found = _sql_counts(TESTS)
    grown = {f: n for f, n in found.items() if n > SQL_IN_TESTS.get(f, 0)}
    assert grown == {}, ("a test reads and writes through magi_desktop/core/store/ functions or the public API (add a "
                         "reader to the store module named for the table if none fits); these files hold more SQL "
                         f"literals than allowed: {grown}")
    shrunk = {f: found.get(f, 0) for f, n in SQL_IN_TESTS.items() if found.get(f, 0) < n}
    assert shrunk == {}, f"SQL moved out (thank you): lower SQL_IN_TESTS to {shrunk} (0: delete the entry)"


# The store is the bottom layer: it knows the event contract, the errors and the text rules, nothing above.
STORE_MAY_IMPORT = ("magi_desktop.core.contracts", "magi_desktop.core.errors", "magi_desktop.core.text",
                    "magi_desktop.core.embed.chunking")       # the last for a type only (TYPE_CHECKING)


def test_the_store_imports_no_layer_above_it():
    offenders = sorted(f"{path.relative_to(PACKAGE).as_posix()} imports {module}"
                       for path in (PACKAGE / "core" / "store").rglob("*.py")
                       for module, _ in _import_statements(path, "magi_desktop")
                       if module.startswith("magi_desktop.") and not module.startswith("magi_desktop.core.store")
                       and not module.startswith(STORE_MAY_IMPORT))
    assert offenders == []


# --- plugins and the UI reach the core through one door each ------------------------------------------------------

def _import_statements(path: Path, package: str) -> list[tuple[str, list[str]]]:
    """(module, the full names it brings) for each import in ``path``, relative imports resolved:
    ``from m import n`` gives (m, [m.n]); ``import a, b`` gives (a, [a]) and (b, [b])."""
    here = [package, *path.relative_to(PACKAGE.parent / package).parent.parts]
    statements = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            statements.extend((alias.name, [alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            statements.append((module, [f"{module}.{alias.name}" for alias in node.names]))
    return statements


def _imported_modules(path: Path, package: str) -> set[str]:
    return {name for module, names in _import_statements(path, package) for name in (module, *names)}


def test_imported_modules_resolves_relative_imports():
    names = _imported_modules(PACKAGE / "ui" / "recovery.py", "magi_desktop")
    assert {"magi_desktop.core.Memory", "magi_desktop.core.store.backup"} <= names


def test_plugins_import_only_the_plugin_api_from_magi_desktop():
    offenders = {}
    for path in PLUGINS.rglob("*.py"):
        ours = {n for n in _imported_modules(path, "plugins")
                if n.split(".")[0] == "magi_desktop" and not n.startswith("magi_desktop.plugin_api")}
        if ours:
            offenders[str(path.relative_to(PLUGINS))] = sorted(ours)
    assert list(PLUGINS.rglob("*.py")) and offenders == {}


# What the UI may import from the core, and why it cannot wait for a Memory.
UI_REACHES_THE_CORE_THROUGH = {
    "magi_desktop.core": "the facade: Memory and the errors it raises (and the safe_text helper)",
    "magi_desktop.core.paths": "the data folder is chosen before a Memory can open",
    "magi_desktop.core.store.backup": "recovery lists and restores backups when the database does not open",
    "magi_desktop.core.llm.openai": "the settings dialog stores the API key before a Memory uses it",
}


def _is_core(name: str) -> bool:
    return name == "magi_desktop.core" or name.startswith("magi_desktop.core.")


def test_the_ui_reaches_the_core_only_through_memory():
    offenders = {}
    for path in (PACKAGE / "ui").rglob("*.py"):
        for module, names in _import_statements(path, "magi_desktop"):
            allowed = module in UI_REACHES_THE_CORE_THROUGH or all(n in UI_REACHES_THE_CORE_THROUGH for n in names)
            if _is_core(module) and not allowed:
                offenders.setdefault(path.name, []).append(module)
    assert offenders == {}


# --- framework integrations: optional extras, over Memory only --------------------------------------------------

FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "langsmith")

# What an integration may import from magi_desktop: what a user of the Python API imports (README, "Python").
INTEGRATIONS_REACH_THE_CORE_THROUGH = {
    "magi_desktop.core": "the facade: Memory, what it answers (EvidencePack, Finding) and the errors it raises",
    "magi_desktop.core.recalled": "recalled_block: recalled text handed to a framework is marked as recalled",
}


def test_only_the_integrations_import_agent_frameworks():
    offenders = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                 if "integrations" not in p.relative_to(PACKAGE).parts[:1]
                 and any(name.split(".")[0] in FRAMEWORKS for name in _imports(p))]
    assert offenders == []


def test_the_integrations_reach_the_core_only_through_memory():
    offenders = {}
    for path in (PACKAGE / "integrations").rglob("*.py"):
        for module, names in _import_statements(path, "magi_desktop"):
            allowed = (module in INTEGRATIONS_REACH_THE_CORE_THROUGH
                       or all(n in INTEGRATIONS_REACH_THE_CORE_THROUGH for n in names))
            if module.split(".")[0] == "magi_desktop" and not allowed:
                offenders.setdefault(path.name, []).append(module)
    assert list((PACKAGE / "integrations").rglob("*.py")) and offenders == {}


def test_the_package_runs_without_loading_a_framework():
    # The extras are optional: the app, the CLI and the MCP server must not need them, nor load them.
    code = ("import sys\n"
            "import magi_desktop.core, magi_desktop.workers, magi_desktop.cli, magi_desktop.doctor\n"
            "import magi_desktop.agents.mcp_server, magi_desktop.integrations\n"
            f"print(sorted(n for n in sys.modules if n.split('.')[0] in {FRAMEWORKS!r}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
