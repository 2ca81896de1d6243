"""A collector's ``settings_schema`` as form fields (docs/plugins.md): a widget per property by its ``type``,
labelled by its ``title`` (else the key made readable), its ``description`` as help text under it, its
``default`` as the initial value or the placeholder, a ``required`` one marked; and the values read back."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .qt import QCheckBox, QLabel, QLineEdit, QPlainTextEdit, QSpinBox, Qt, QVBoxLayout, QWidget

SPIN_RANGE = (0, 2_147_483_647)     # an integer without its own minimum / maximum: a count, a number of days
HELP_STYLE = "color: palette(placeholder-text)"


class FieldError(ValueError):
    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}")
        self.where = where


def readable(key: str) -> str:
    """A setting's key as a label: "min_play_seconds" → "Min play seconds", "backfillDays" → "Backfill days"."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key)
    words = re.sub(r"[\s_\-]+", " ", words).strip().lower()
    return words[:1].upper() + words[1:] if words else key


def spec_of(raw: Any) -> Mapping[str, Any]:
    """A property's spec; anything else (a plugin's mistake) reads as an untyped string."""
    return raw if isinstance(raw, Mapping) else {}


def is_required(spec: Mapping[str, Any]) -> bool:
    return spec.get("required") is True


def label_text(key: str, spec: Mapping[str, Any]) -> str:
    title = spec.get("title")
    text = title.strip() if isinstance(title, str) and title.strip() else readable(key)
    return text + (" (required)" if is_required(spec) else "")


def _shown_default(default: Any) -> str:
    if isinstance(default, list):
        return ", ".join(str(v) for v in default)
    if isinstance(default, bool):
        return "on" if default else "off"
    return json.dumps(default, ensure_ascii=False) if isinstance(default, dict) else str(default)


@dataclass
class SettingField:
    """One property: its widget (what the user edits) and the row that shows it with its help text."""

    key: str
    kind: str
    spec: Mapping[str, Any]
    widget: QWidget
    row: QWidget
    label: QLabel
    help: QLabel | None
    unset: bool = False          # the user had not set it: a field left as shown stays unset
    shown: Any = None            # what the field showed then (the default, or a spin box's 0)

    def value(self, where: str) -> Any:
        """What the field holds, typed; None when left empty — or, for a setting the user never set, left as it
        showed (the default): the plugin's default applies, and a later version's default too."""
        held = self._held(where)
        return None if self.unset and held == self.shown else held

    def _held(self, where: str) -> Any:
        widget = self.widget
        if isinstance(widget, QCheckBox):
            return widget.isChecked()
        if isinstance(widget, QSpinBox):
            return widget.value()
        if isinstance(widget, QPlainTextEdit):                 # an array: one item a line
            lines = [line.strip() for line in widget.toPlainText().splitlines() if line.strip()]
            items = spec_of(self.spec.get("items")).get("type")
            if items in ("number", "integer"):
                return [_number(line, items, f"{where} (line {n})") for n, line in enumerate(lines, 1)] or None
            return lines or None
        assert isinstance(widget, QLineEdit)
        text = widget.text().strip()
        if not text:
            return None
        if self.kind in ("number", "integer"):
            return _number(text, self.kind, where)
        if self.kind == "object":
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                raise FieldError(where, 'must be a JSON object, like {"key": "value"}') from None
            if not isinstance(parsed, dict):
                raise FieldError(where, 'must be a JSON object, like {"key": "value"}')
            return parsed
        return text


def _number(text: str, kind: str, where: str) -> int | float:
    try:
        return int(text) if kind == "integer" else float(text)
    except ValueError:
        raise FieldError(where, f"must be {'a whole number' if kind == 'integer' else 'a number'}") from None


def setting_field(key: str, raw_spec: Any, value: Any) -> SettingField:
    """The field for one property, showing ``value`` (the saved setting) or else its default."""
    spec = spec_of(raw_spec)
    declared = spec.get("type")
    kind = declared if isinstance(declared, str) else "string"
    default = spec.get("default")
    shown = value if value is not None else default
    widget: QWidget
    if kind == "array":
        items = value if isinstance(value, list) else [] if value is None else [value]   # a hand-edited file
        widget = QPlainTextEdit("\n".join(str(v) for v in items))
        hint = "one per line"
        if isinstance(default, list) and default:
            hint += f"; default: {_shown_default(default)}"
        widget.setPlaceholderText(hint)
        widget.setFixedHeight(64)
    elif kind == "boolean":
        widget = QCheckBox()
        widget.setChecked(bool(shown))
    elif kind == "integer" and (shown is None or (isinstance(shown, int) and not isinstance(shown, bool))):
        widget = QSpinBox()
        low, high = spec.get("minimum", SPIN_RANGE[0]), spec.get("maximum", SPIN_RANGE[1])
        widget.setRange(int(low) if isinstance(low, int) else SPIN_RANGE[0],
                        int(high) if isinstance(high, int) else SPIN_RANGE[1])
        widget.setValue(int(shown or 0))
    else:      # a number, a string, an object (as JSON); an integer the saved file holds wrongly shows as typed
        shown_value = json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value
        widget = QLineEdit("" if shown_value is None else str(shown_value))
        if default is not None:
            widget.setPlaceholderText(f"default: {_shown_default(default)}")
        elif is_required(spec):
            widget.setPlaceholderText("required")
    description = spec.get("description")
    help_label = None
    row = QWidget()
    column = QVBoxLayout(row)
    column.setContentsMargins(0, 0, 0, 0)
    column.setSpacing(2)
    column.addWidget(widget)
    if isinstance(description, str) and description.strip():
        widget.setToolTip(description)
        help_label = QLabel(description)
        help_label.setTextFormat(Qt.TextFormat.PlainText)     # a plugin's words, never markup
        help_label.setWordWrap(True)
        help_label.setStyleSheet(HELP_STYLE)
        column.addWidget(help_label)
    label = QLabel(label_text(key, spec) + ":")
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setBuddy(widget)
    field = SettingField(key, kind, spec, widget, row, label, help_label, unset=value is None)
    if value is None:
        field.shown = field._held(key)
    return field
