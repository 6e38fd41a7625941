"""A campaign file: many `tune` jobs in one TOML file, read and checked whole before anything runs.

    name = "models"                      # optional: the file's name without .toml
    [defaults]                           # any job key but name and after (a job's script or model replaces both)
    mode = "op"
    bank = "bank"
    [[job]]
    name = "resnet-subgraphs"
    script = "train_resnet.py"
    args = ["--epochs", "1"]
    mode = "subgraph"
    [[job]]
    name = "resnet-ops"
    script = "train_resnet.py"
    after = ["resnet-subgraphs"]         # AOE's advice: subgraphs first, then operators of the same model

Paths are relative to the file's directory. Every problem is found, not only the first: one line each, naming the
job (by name and by its place in the file) and the key.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aoe_runner.common.modes import TuneMode
from aoe_runner.common.quantities import parse_duration, parse_size
from aoe_runner.common.regular_files import read_with_status
from aoe_runner.common.safe_text import visible
from aoe_runner.errors import AoeRunnerError, InputError, UsageError
from aoe_runner.frameworks.kinds import Framework

MAX_FILE_BYTES = 4 * 2**20
MAX_JOBS = 10_000
JOB_KEYS = frozenset(
    {"name", "script", "args", "mode", "bank", "model_memory", "timeout", "grace", "env", "framework", "model", "weight",
     "model_framework", "tune_ops", "after", "python"}
)  # fmt: skip
DEFAULT_KEYS = JOB_KEYS - {"name", "after"}
TOP_KEYS = frozenset({"name", "defaults", "job"})


@dataclass(frozen=True)
class Job:
    """One `tune` of a campaign, its paths absolute."""

    name: str
    mode: TuneMode
    script: Path | None = None
    model: Path | None = None
    args: tuple[str, ...] = ()
    bank: Path | None = None
    model_memory: str | None = None
    timeout: str | None = None
    grace: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    framework: str = "auto"
    weight: Path | None = None
    model_framework: str | None = None
    tune_ops: Path | None = None
    after: tuple[str, ...] = ()
    python: str | None = None

    @property
    def target(self) -> Path:
        """The file the job tunes: its script, or its model."""
        path = self.script if self.script is not None else self.model
        assert path is not None
        return path

    def tune_argv(self) -> list[str]:
        """`aoe-runner tune`'s arguments for this job (the device, chosen when it runs, is not among them)."""
        argv = ["tune"] if self.model is None else ["tune", "--model", str(self.model)]
        if self.script is not None:
            argv += [str(self.script), "--framework", self.framework]
        argv += ["--mode", self.mode.value]
        for option, value in (
            ("--bank", self.bank), ("--model-memory", self.model_memory), ("--timeout", self.timeout),
            ("--grace", self.grace), ("--weight", self.weight), ("--model-framework", self.model_framework),
            ("--tune-ops", self.tune_ops), ("--python", self.python),
        ):  # fmt: skip
            if value is not None:
                argv += [option, str(value)]
        return [*argv, "--", *self.args] if self.args else argv


@dataclass(frozen=True)
class Campaign:
    name: str
    path: Path
    text: str  # the file as read: the record keeps it
    jobs: tuple[Job, ...]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def job(self, name: str) -> Job:
        return next(job for job in self.jobs if job.name == name)


class CampaignFileError(InputError):
    """The campaign file's problems, each on its own line (exit 4)."""

    def __init__(self, where: str, problems: list[str]) -> None:
        super().__init__(where, problems[0] if len(problems) == 1 else f"{len(problems)} problems")
        self.problems = problems
        self.message = "\n".join(f"{where}: {problem}" for problem in problems)

    def __reduce__(self) -> Any:
        return (type(self), (self.where, self.problems))


def load_campaign(path: Path) -> Campaign:
    """The campaign in `path`; CampaignFileError listing every problem, InputError when it cannot be read."""
    data, _ = read_with_status(str(path), MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise InputError(str(path), f"larger than {MAX_FILE_BYTES // 2**20} MiB: not a campaign file")
    try:
        text = data.decode("utf-8")
        document = _toml().loads(text)
    except UnicodeDecodeError as error:
        raise InputError(str(path), f"not UTF-8 (byte {error.start})") from None
    except ValueError as error:  # tomllib.TOMLDecodeError
        raise InputError(str(path), f"not TOML: {error}") from None
    problems: list[str] = []
    jobs = _jobs(document, path.parent.resolve(), problems)
    named = {str(table["name"]) for table in document.get("job", []) if isinstance(table, dict) and "name" in table}
    _check_after(jobs, problems, named)
    if problems:
        raise CampaignFileError(str(path), problems)
    name = document.get("name", path.stem)
    return Campaign(str(name), path.resolve(), text, tuple(jobs))


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    else:  # pyproject requires tomli on 3.10
        import tomli

        return tomli


def _jobs(document: dict[str, Any], base: Path, problems: list[str]) -> list[Job]:
    for key in sorted(set(document) - TOP_KEYS):
        problems.append(f"unknown key {key!r} (a campaign holds name, [defaults] and [[job]] tables)")
    if "name" in document and not _is_name(document["name"]):
        problems.append("name: not a name (letters, digits, . _ - and spaces)")
    defaults = document.get("defaults", {})
    if not isinstance(defaults, dict):
        problems.append("defaults: not a table")
        defaults = {}
    for key in sorted(set(defaults) - DEFAULT_KEYS):
        why = "a job's own key" if key in JOB_KEYS else "unknown key"
        problems.append(f"[defaults]: {why} {key!r}")
    tables = document.get("job", [])
    if not isinstance(tables, list) or not tables:
        problems.append("no [[job]] tables: a campaign has at least one job")
        return []
    if len(tables) > MAX_JOBS:
        problems.append(f"{len(tables)} jobs: at most {MAX_JOBS}")
        return []
    jobs, seen = [], set()
    for number, table in enumerate(tables, start=1):
        if not isinstance(table, dict):
            problems.append(f"job {number}: not a table")
            continue
        label = f"job {number}" + (f" ({visible(str(table['name']))})" if "name" in table else "")
        before = len(problems)
        given = {k: v for k, v in defaults.items() if k in DEFAULT_KEYS}
        if "model" in table:  # a job's own target replaces the default one, whichever kind it is
            given.pop("script", None)
        if "script" in table:
            given.pop("model", None)
        job = _job({**given, **table}, base, label, problems)
        name = table.get("name")
        if isinstance(name, str) and name in seen:
            problems.append(f"{label}: name: {name!r} is the name of an earlier job")
        elif isinstance(name, str):
            seen.add(name)
        if job is not None and len(problems) == before:
            jobs.append(job)
    return jobs


def _job(table: dict[str, Any], base: Path, label: str, problems: list[str]) -> Job | None:
    fields: dict[str, Any] = {}

    def problem(key: str, text: str) -> None:
        problems.append(f"{label}: {key}: {text}")

    for key in sorted(set(table) - JOB_KEYS):
        problem(key, "unknown key")
    name = table.get("name")
    if not _is_name(name):
        problem("name", "required, and a name (letters, digits, . _ - and spaces)")
    fields["name"] = name
    _mode(table, fields, problem)
    _paths(table, base, fields, problem)
    _texts(table, fields, problem)
    if problems and problems[-1].startswith(f"{label}: "):
        return None
    try:
        return Job(**fields)
    except (TypeError, ValueError) as error:  # a combination the fields do not make
        problem("job", str(error))
        return None


def _mode(table: dict[str, Any], fields: dict[str, Any], problem: Any) -> None:
    mode = table.get("mode")
    if mode is None:
        problem("mode", "required (in the job or in [defaults]): op or subgraph")
        return
    try:
        fields["mode"] = TuneMode.parse(str(mode))
    except UsageError:
        problem("mode", f"{mode!r} is not op or subgraph (or 2, 1, opat, sgat)")


def _paths(table: dict[str, Any], base: Path, fields: dict[str, Any], problem: Any) -> None:
    for key in ("script", "model", "bank", "weight", "tune_ops"):
        if key in table:
            value = table[key]
            if not isinstance(value, str) or not value or "\0" in value:
                problem(key, "not a path")
            else:
                fields[key] = base / value
    if ("script" in fields) == ("model" in fields) and "script" not in table and "model" not in table:
        problem("script", "a job tunes a script or a model: give one of script and model")
    elif "script" in table and "model" in table:
        problem("model", "a job tunes a script or a model, not both")
    for key in ("script", "model", "weight", "tune_ops"):
        if key in fields and not fields[key].is_file():
            problem(key, f"{fields[key]}: no such file")
    if "model" in table and table.get("framework", "auto") != "auto":
        problem("framework", "a model's framework is model_framework")
    if "script" in table and ("weight" in table or "model_framework" in table):
        problem("weight" if "weight" in table else "model_framework", "goes with model")


def _texts(table: dict[str, Any], fields: dict[str, Any], problem: Any) -> None:
    args = table.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) and "\0" not in arg for arg in args):
        problem("args", "not a list of strings")
    else:
        fields["args"] = tuple(args)
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(_variable(k) and isinstance(v, str) and "\0" not in v for k, v in env.items()):
        problem("env", "not a table of variable names to strings")
    else:
        fields["env"] = tuple(sorted(env.items()))
    after = table.get("after", [])
    if not isinstance(after, list) or not all(isinstance(name, str) for name in after):
        problem("after", "not a list of job names")
    else:
        fields["after"] = tuple(after)
    for key, check in (("timeout", parse_duration), ("grace", parse_duration), ("model_memory", parse_size)):
        if key in table:
            try:
                check(str(table[key]), key)
                fields[key] = str(table[key])
            except AoeRunnerError as error:
                problem(key, error.message.removeprefix(f"{key}: "))
    for key in ("framework", "model_framework", "python"):
        if key in table:
            if not isinstance(table[key], str) or not table[key] or "\0" in table[key]:
                problem(key, "not a string")
            else:
                fields[key] = table[key]
    if "framework" in fields:
        try:
            Framework.parse(fields["framework"])
        except UsageError:
            problem("framework", f"{fields['framework']!r} is not one of tf, mindspore, pytorch, auto")


def _check_after(jobs: list[Job], problems: list[str], named: set[str]) -> None:
    """Every name `after` gives is a job (`named`: every job's name, those with problems too), and no job waits on
    itself, however indirectly (among the jobs read without a problem)."""
    for job in jobs:
        for name in job.after:
            if name not in named:
                problems.append(f"job {job.name!r}: after: {name!r} is no job of this campaign")
    known = {job.name for job in jobs}
    waits = {job.name: {name for name in job.after if name in known} for job in jobs}
    done: set[str] = set()
    while len(done) < len(waits):
        ready = [name for name, after in waits.items() if name not in done and after <= done]
        if not ready:
            stuck = sorted(name for name in waits if name not in done)
            problems.append(f"after: the jobs {', '.join(map(repr, stuck))} wait on each other (a cycle)")
            return
        done.update(ready)


def _is_name(value: object) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= 100
        and value == value.strip()  # `--rerun` names it as typed
        and all(c.isalnum() or c in "._- " for c in value)
    )


def _variable(name: object) -> bool:
    return isinstance(name, str) and name.isidentifier() and name.isascii()
