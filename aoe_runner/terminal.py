"""All printing goes through here: results to stdout, warnings and errors to stderr, one line each."""

from __future__ import annotations

import sys
from typing import TextIO


class Terminal:
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self._out = out
        self._err = err

    @property
    def out(self) -> TextIO:
        return self._out or sys.stdout

    @property
    def err(self) -> TextIO:
        return self._err or sys.stderr

    def result(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def info(self, message: str) -> None:
        print(message, file=self.err)

    def warning(self, message: str) -> None:
        print(f"warning: {message}", file=self.err)

    def error(self, message: str) -> None:
        print(f"error: {message}", file=self.err)
