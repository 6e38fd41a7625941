"""Plain summary data (report/summary_data.py) read as the pydantic models' attributes, for the text formats.

A table shows a few rows of a summary: building the models of all of them (and importing pydantic's machinery to do
it) cost more than the rest of `report` put together. The view wraps the dicts and lists as they are, and wraps a
row only when it is read, so a table of the top 20 of 100,000 operators touches 20. `tests/render/test_plain_view.py`
holds the text made from the view equal to the text made from the models.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload


class Fields:
    """A dict's keys as attributes; nested dicts and lists as views too."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        try:
            return view(self._data[name])
        except KeyError:
            raise AttributeError(name) from None


class Items(Sequence[Any]):
    """A list whose items are views, each made as it is read."""

    __slots__ = ("_items",)

    def __init__(self, items: list[Any]) -> None:
        self._items = items

    def made(self, items: list[Any]) -> list[Any]:
        """The views of some of the items."""
        return [view(item) for item in items]

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return self.made(self._items[index])
        return self.made([self._items[index]])[0]

    def __iter__(self) -> Iterator[Any]:
        return iter(self[:])


class RankedOperators(Items):
    """A summary's operators, ranked (report.summary_data.summary_parts): a row is made only for what is read."""

    __slots__ = ()

    def made(self, items: list[Any]) -> list[Any]:
        from aoe_runner.report.summary_data import operator_rows

        return [Fields(row) for row in operator_rows(items)]


def view(value: Any) -> Any:
    if isinstance(value, dict):
        return Fields(value)
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return Items(value)
    return value


def summary_view(parts: tuple[dict[str, Any], list[Any]]) -> Any:
    """A summary's parts (its data less the operators' rows, and its ranked operators) read as a BankSummary is."""
    data, operators = parts
    return Fields({**data, "operators": RankedOperators(operators), "legacy": data.get("legacy")})
