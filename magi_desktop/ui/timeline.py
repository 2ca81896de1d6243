"""A chart of recent activity: stacked bars of stored events per day, one colour per source."""

from __future__ import annotations

from datetime import date, timedelta

from .qt import QColor, QFont, QPainter, QPen, QRectF, QSize, Qt, QWidget

PALETTE = ["#4b3f8f", "#2a9d8f", "#e9c46a", "#f4a261", "#e76f51", "#457b9d", "#8d99ae", "#6a994e", "#bc4749",
           "#9c6644"]


class TimelineChart(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.days: list[str] = []
        self.series: dict[str, dict[str, int]] = {}
        self.setMinimumSize(QSize(480, 260))

    def set_activity(self, activity: dict[str, dict[str, int]], last_day: date, days: int) -> None:
        self.days = [(last_day - timedelta(days=days - 1 - i)).isoformat() for i in range(days)]
        # Biggest sources first, so the legend reads like the bars.
        self.series = dict(sorted(activity.items(), key=lambda kv: -sum(kv[1].values())))
        self.update()

    def total(self, day: str) -> int:
        return sum(counts.get(day, 0) for counts in self.series.values())

    def colour(self, index: int) -> QColor:
        return QColor(PALETTE[index % len(PALETTE)])

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(self.rect(), self.palette().base())
        if not self.days:
            painter.end()
            return
        legend_width = 150
        left, top, bottom = 44, 16, 34
        plot = QRectF(left, top, max(10, self.width() - left - legend_width - 16),
                      max(10, self.height() - top - bottom))
        peak = max([self.total(d) for d in self.days] + [1])
        text_pen = QPen(self.palette().text().color())
        grid_pen = QPen(QColor("#d0d0d0"))
        small = QFont(self.font())
        small.setPointSizeF(max(7.0, small.pointSizeF() - 1))
        painter.setFont(small)
        for step in range(5):                         # horizontal grid with counts
            y = plot.bottom() - plot.height() * step / 4
            painter.setPen(grid_pen)
            painter.drawLine(int(plot.left()), int(y), int(plot.right()), int(y))
            painter.setPen(text_pen)
            right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
            painter.drawText(QRectF(0, y - 8, left - 6, 16), right, str(round(peak * step / 4)))
        slot = plot.width() / len(self.days)
        bar = max(2.0, slot * 0.7)
        for i, day in enumerate(self.days):
            x = plot.left() + i * slot + (slot - bar) / 2
            y = plot.bottom()
            for j, counts in enumerate(self.series.values()):
                count = counts.get(day, 0)
                if not count:
                    continue
                height = plot.height() * count / peak
                painter.fillRect(QRectF(x, y - height, bar, height), self.colour(j))
                y -= height
            if len(self.days) <= 16 or i % 2 == 0:
                painter.setPen(text_pen)
                painter.drawText(QRectF(x - 10, plot.bottom() + 4, bar + 20, 16), Qt.AlignmentFlag.AlignHCenter,
                                 day[5:])
        painter.setFont(self.font())
        lx = plot.right() + 16
        for j, (source, counts) in enumerate(self.series.items()):
            y = top + j * 20
            if y > self.height() - 20:
                break
            painter.fillRect(QRectF(lx, y + 3, 12, 12), self.colour(j))
            painter.setPen(text_pen)
            painter.drawText(QRectF(lx + 18, y, legend_width - 20, 18), Qt.AlignmentFlag.AlignVCenter,
                             f"{source} ({sum(counts.values())})")
        painter.end()
