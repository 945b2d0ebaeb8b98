"""The ``/usage`` chart: a real PNG of the period's days, drawn in a worker thread, never on the event loop."""

from __future__ import annotations

import struct
import threading
from decimal import Decimal

from bot.core.people.usage_report import Period, period_days
from bot.discord_adapter import usage_chart
from storage.usage import Spend

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def month_of_use() -> list[tuple[str, Spend]]:
    days = period_days("2026-12-01", Period.MONTH)
    return [(day, Spend(runs=i % 4, requests=i, cost=Decimal("0.001") * i)) for i, day in enumerate(days)]


async def test_the_chart_is_a_png_image_of_a_readable_size():
    png = await usage_chart.chart_png(month_of_use())
    assert png.startswith(PNG_MAGIC)
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    assert (width, height) == (800, 360)


async def test_the_chart_is_drawn_off_the_event_loop(monkeypatch):
    drawn_in: list[threading.Thread] = []
    draw = usage_chart._draw

    def spy(days, locale=None):
        drawn_in.append(threading.current_thread())
        return draw(days, locale)

    monkeypatch.setattr(usage_chart, "_draw", spy)
    png = await usage_chart.chart_png(month_of_use())
    assert png.startswith(PNG_MAGIC)
    assert drawn_in and drawn_in[0] is not threading.current_thread()
