"""All printing goes through here: results to stdout, warnings and errors to stderr, one line each.

A message is one line whatever it quotes: control characters in a name or path are shown as escapes. A character
the stream's encoding cannot hold (a non-ASCII name on an ASCII terminal, a lone surrogate) is written as a
`\\uXXXX` escape, which is also what it means inside a JSON string, rather than crash.
"""

from __future__ import annotations

import codecs
import errno
import os
import sys
from typing import BinaryIO, TextIO

from aoe_runner.common.safe_text import visible
from aoe_runner.errors import InputError

Pieces = list[bytes | memoryview]  # UTF-8 text in pieces, written one after the other (render/json_format.py)
_ESCAPE = "aoe-runner-escape"


class Document(bytes):
    """The UTF-8 bytes of a document that names its own encoding (an HTML page's `<meta charset="utf-8">`): written
    as they are wherever they go. Encoded again for stdout's encoding, a page would show `\\u00b5s` for µs under
    PYTHONIOENCODING=ascii, and still claim to be UTF-8."""


class Terminal:
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self._out = out
        self._err = err
        self.quiet = False  # -q: results and errors only
        self.verbose = False  # -v: more detail (every preflight check, which store, what was read)

    @property
    def out(self) -> TextIO | None:
        """stdout (None when it is closed, `>&-`)."""
        return self._out or sys.stdout

    @property
    def err(self) -> TextIO | None:
        """stderr (None when it is closed, `2>&-`)."""
        return self._err or sys.stderr

    def err_is_terminal(self) -> bool:
        return isatty(self.err)

    def width(self, wide: bool = False, stream: TextIO | None = None) -> int | None:
        """Columns a table on stdout (or `stream`) may use: None (no limit) with --wide or when it is not a terminal;
        COLUMNS wins."""
        if wide:
            return None
        columns = os.environ.get("COLUMNS", "").strip()
        if columns.isascii() and columns.isdigit() and int(columns) > 0:
            return int(columns)
        if not isatty(stream or self.out):
            return None
        import shutil

        return shutil.get_terminal_size().columns

    def result(self, text: str | bytes | Pieces) -> None:
        """Text, or UTF-8 bytes or pieces of them (written as they are where the stream's encoding is UTF-8: no
        decoding, no encoding).

        A reader that stopped reading (`| head`) ends the output quietly; any other failure to write (a full disk, a
        closed stdout) is an InputError naming stdout.
        """
        out = self.out
        if out is None:
            raise InputError("stdout", "cannot write the result: stdout is closed")
        try:
            _result(out, text)
        except OSError as error:
            failure = output_failure(error, out)
            if failure is not None:
                raise failure from None

    def info(self, message: str) -> None:
        if not self.quiet:
            write(self.err, f"{visible(message)}\n")

    def detail(self, message: str) -> None:
        """A note only -v asks for."""
        if self.verbose and not self.quiet:
            write(self.err, f"{visible(message)}\n")

    def outcome(self, message: str) -> None:
        """How a command's work ended, on stderr: said even with -q, since it is the command's answer."""
        write(self.err, f"{visible(message)}\n")

    def warning(self, message: str) -> None:
        if not self.quiet:
            write(self.err, f"warning: {visible(message)}\n")

    def error(self, message: str) -> None:
        write(self.err, f"error: {visible(message)}\n")


def _result(out: TextIO, text: str | bytes | Pieces) -> None:
    """Written to the stream's binary buffer, piece by piece (_write_all), wherever it has one: unbuffered, a text
    stream hands its encoded text to the raw stream, which may write only part of it, and drops the rest unsaid.
    UTF-8 bytes go to a UTF-8 stream as they are, and a Document to any stream; anything else is text first."""
    buffer: BinaryIO | None = getattr(out, "buffer", None)
    if buffer is not None and (isinstance(text, Document) or not isinstance(text, str) and _is_utf8(out)):
        pieces: Pieces = [text] if isinstance(text, bytes) else text
    else:
        if not isinstance(text, str):
            text = (text if isinstance(text, bytes) else b"".join(text)).decode("utf-8", "surrogateescape")
        if buffer is None:
            write(out, text)
            out.flush()
            return
        pieces = [_encoded(out, text)]
    out.flush()
    _write_all(buffer, pieces)
    buffer.flush()


def _encoded(stream: TextIO, text: str) -> bytes:
    """text as `stream` would encode it (write()'s escapes for what its encoding cannot hold)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        return text.encode(encoding, getattr(stream, "errors", None) or "strict")
    except UnicodeEncodeError:
        return text.encode(encoding, _ESCAPE)


def _write_all(buffer: BinaryIO, pieces: Pieces) -> None:
    """Each piece whole, one after the other. Unbuffered (`python -u`, PYTHONUNBUFFERED), stdout's buffer is the raw
    stream, which may write part of a piece and say so, or nothing (a non-blocking pipe that is full); and Ctrl-C
    is heard between writes, where writelines() would hear it only once every piece is out."""
    for piece in pieces:
        view = memoryview(piece)
        while view:
            written = buffer.write(view)
            if written is None:  # a raw non-blocking stream that would block: as a buffered one says it
                raise BlockingIOError(errno.EAGAIN, "write could not complete without blocking")
            view = view[written:]


def output_failure(error: OSError, stream: TextIO) -> InputError | None:
    """What a failed write to an output stream means: None when its reader left (what is left goes nowhere, quietly),
    else a one-line error naming the stream. Either way, what is still buffered is dropped: the flush at exit would
    only fail again."""
    _discard_further_output(stream)
    if isinstance(error, BrokenPipeError):
        return None
    name = "stdout" if stream is sys.stdout else getattr(stream, "name", "the output")
    return InputError(str(name), f"cannot write the result: {error.strerror or error}")


def _discard_further_output(stream: TextIO) -> None:
    """Point the stream's descriptor at /dev/null, so the flush at exit does not fail again (Python's own advice)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stream with no descriptor: nothing is flushed at exit
        pass


def isatty(stream: TextIO | None) -> bool:
    """Whether `stream` is a terminal; False for None, a closed stream or one replaced by something else."""
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError, OSError):  # a closed or replaced stream
        return False


def _is_utf8(stream: TextIO) -> bool:
    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "ascii").name == "utf-8"
    except LookupError:
        return False


def write(stream: TextIO | None, text: str) -> None:
    """stream.write(text); what the stream's encoding cannot hold is escaped (a text stream encodes before writing).
    A closed stream (`2>&-`: Python has no sys.stderr) takes nothing: there is nowhere to say anything."""
    if stream is None:
        return
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        stream.write(text.encode(encoding, _ESCAPE).decode(encoding))


def _json_escape(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "".join(_utf16_escape(ord(char)) for char in error.object[error.start : error.end]), error.end


def _utf16_escape(code: int) -> str:
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


codecs.register_error(_ESCAPE, _json_escape)
