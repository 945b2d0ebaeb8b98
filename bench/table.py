"""The results table a bench prints: its columns declared once, so the header and the rows line up by construction."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    """``width`` characters, title and values aligned by ``align``; a value is formatted by ``spec`` (``.2f``…)."""

    title: str
    width: int
    spec: str = ""
    align: str = ">"

    def cell(self, value: object) -> str:
        return format(value, f"{self.align}{self.width}{self.spec}")


STORE = Column("store", 11, align="<")  # every bench's first column: which store a row measured


class Table:
    def __init__(self, *columns: Column) -> None:
        self.columns = columns

    def header(self) -> str:
        return "".join(format(column.title, f"{column.align}{column.width}") for column in self.columns)

    def row(self, *values: object) -> str:
        return "".join(column.cell(value) for column, value in zip(self.columns, values, strict=True))


TARGETS = Table(  # a bench that checks goals: what it measured, against what, and whether it met the goal
    STORE,
    Column("target", 40, align="<"),
    Column("measured", 17),
    Column("floor / goal", 27),
    Column("ratio", 9),
    Column("verdict", 9),
)


def verdict(passed: bool) -> str:
    return "pass" if passed else "FAIL"
