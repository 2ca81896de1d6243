"""The one place PySide6 is imported; the rest of the UI imports Qt names from here."""

from PySide6.QtCore import QObject, Qt, QTimer, Signal  # noqa: F401
from PySide6.QtGui import QAction, QColor, QFont, QIcon, QPainter, QPixmap  # noqa: F401
from PySide6.QtWidgets import (  # noqa: F401
    QApplication,
    QFormLayout,
    QLabel,
    QMainWindow,
    QMenu,
    QSystemTrayIcon,
    QVBoxLayout,
    QWidget,
)
