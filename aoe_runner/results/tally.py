"""One warning line per kind of problem in a file, however many records share it: the count and the first example."""

from __future__ import annotations

from aoe_runner.results.text import shortened


class Tally:
    """Counts a kind of problem across many records and keeps the first example."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.count = 0
        self.first = ""

    def add(self, example: str) -> None:
        self.count += 1
        if self.count == 1:
            self.first = example

    def flush(self, label: str, total: int, warnings: list[str]) -> None:
        if self.count:
            warnings.append(f"{label}: {self.count} of {total} {self.what} (first: {shortened(self.first, 120)})")
