"""The ``/usage`` chart: runs per day as bars and cost per day as a line on a second axis, as PNG bytes.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, so no global figure state and no GUI backend) in
a worker thread: a render takes tens of milliseconds, which the event loop must not spend while Discord waits for
other interactions' acknowledgements. Its labels and day names are in the asking member's language.
"""

from __future__ import annotations

import asyncio
import io
from datetime import date

from babel.dates import format_date
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from bot.i18n import language_of, localized
from storage.usage import Spend

MAX_DATE_LABELS = 10
RUNS_COLOUR = "#5865f2"  # Discord's blurple
COST_COLOUR = "#eb459e"


async def chart_png(days: list[tuple[str, Spend]], locale: object = None) -> bytes:
    """The chart of ``days`` (UTC days, oldest first), rendered off the event loop."""
    return await asyncio.to_thread(_draw, days, locale)


def _draw(days: list[tuple[str, Spend]], locale: object = None) -> bytes:
    figure = Figure(figsize=(8, 3.6), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    runs_axis = figure.add_subplot()
    positions = range(len(days))
    runs = [totals.runs for _, totals in days]
    runs_axis.bar(positions, runs, color=RUNS_COLOUR, label=localized("chart-runs", locale))
    runs_axis.set_ylabel(localized("chart-runs", locale))
    runs_axis.set_ylim(bottom=0, top=max(runs) * 1.15 or 1)
    runs_axis.yaxis.set_major_locator(MaxNLocator(integer=True))
    step = -(-len(days) // MAX_DATE_LABELS)
    runs_axis.set_xticks(list(positions)[::step], [_label(day, locale) for day, _ in days][::step])
    cost_axis = runs_axis.twinx()
    costs = [float(totals.cost) for _, totals in days]
    cost_axis.plot(positions, costs, color=COST_COLOUR, marker="o", label=localized("chart-cost-line", locale))
    cost_axis.set_ylabel(localized("chart-cost-axis", locale))
    cost_axis.set_ylim(bottom=0, top=max(costs) * 1.15 or 0.01)
    cost_axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"\\${value:g}"))
    figure.suptitle(localized("chart-title", locale, first=days[0][0], last=days[-1][0]))
    figure.legend(loc="outside lower center", ncols=2, fontsize="small")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _label(day: str, locale: object) -> str:
    """``Mar 05`` in English, ``5 mar`` in Spanish: the day and its month's short name."""
    return format_date(date.fromisoformat(day), localized("chart-day-format", locale), locale=language_of(locale))
