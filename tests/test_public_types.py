"""Every public type says what it is and what each of its fields means (issue item 6): the types
magi_desktop.core and core.retrieval export, and the results public Memory methods return."""

import dataclasses
import inspect
import tomllib
from pathlib import Path

import pytest

import magi_desktop
import magi_desktop.core as core
import magi_desktop.core.retrieval as retrieval
from magi_desktop.core import l4
from magi_desktop.core.import_report import ImportReport

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = sorted({getattr(module, name) for module in (core, retrieval) for name in module.__all__
                 if inspect.isclass(getattr(module, name))} | {l4.Decision, ImportReport}, key=lambda t: t.__name__)


def fields_of(cls) -> list[str]:
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls)]
    return list(getattr(cls, "_fields", ()))


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda cls: cls.__name__)
def test_a_public_type_has_a_docstring_naming_each_field(cls):
    doc = inspect.getdoc(cls) or ""
    assert doc and not doc.startswith(f"{cls.__name__}("), f"{cls.__name__} has no docstring of its own"
    undocumented = [name for name in fields_of(cls) if f"``{name}``" not in doc]
    assert undocumented == [], f"{cls.__name__}'s docstring does not say what these mean: {undocumented}"


def test_the_package_ships_its_annotations():
    assert (Path(magi_desktop.__file__).parent / "py.typed").is_file()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["magi_desktop"]
