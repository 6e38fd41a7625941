"""The exit-code contract and the domain errors that carry an exit code."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Every exit code the CLI uses; the tables of README.md and docs/reference.md give their meanings (a test checks)."""

    OK = 0
    FINDING = 1  # the tool worked and found a problem: a regression, a failed check, a schema violation
    USAGE = 2  # bad command line: unknown option, bad flag value, wrong number of paths
    INTERNAL = 3  # a bug in aoe-runner; a crash log was written
    BAD_INPUT = 4  # an input could not be read or is not what it claims to be; other inputs were still processed
    ENV_DRIFT = 5  # two runs were recorded in different environments (CANN, SoC, driver): not compared
    TIMEOUT = 124  # `tune`: the script ran past --timeout and was stopped
    INTERRUPTED = 130  # Ctrl-C


class AoeRunnerError(Exception):
    """A failure the user can act on: printed as one line, never as a traceback."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(AoeRunnerError):
    exit_code = ExitCode.USAGE


class Interrupted(AoeRunnerError):
    """Ctrl-C, SIGTERM or SIGHUP stopped the command; what it says was or was not recorded."""

    exit_code = ExitCode.INTERRUPTED


class EnvironmentDrift(AoeRunnerError):
    exit_code = ExitCode.ENV_DRIFT


class InputError(AoeRunnerError):
    """An input path or file that cannot be used."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason

    def __reduce__(self) -> tuple[type[InputError], tuple[str, str]]:  # survives a trip to a worker process
        return (type(self), (self.where, self.reason))
