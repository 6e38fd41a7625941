"""The command tree: the root options and every command, registered here in the order `--help` lists them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer

from aoe_runner import __version__
from aoe_runner.cli.click_glue import AoeTyper
from aoe_runner.cli.terminal import terminal
from aoe_runner.common import colour
from aoe_runner.errors import ExitCode, UsageError

SCRIPT_COMMAND = {"allow_interspersed_args": True}  # options may follow the script's path; its own arguments go after --
ABOUT = "Preflight, supervise and report on Huawei AOE (Ascend Optimization Engine) tuning runs."
# Every command, in the order `--help` lists them: (group, name, module of aoe_runner.cli, function, takes a script).
# A command's module is imported only when the command line names it (or asks for every command's help).
COMMANDS = (
    (None, "report", "report", "report", False),
    (None, "validate", "validate", "validate", False),
    (None, "preflight", "preflight", "preflight", False),
    (None, "completion", "completion", "completion", False),
    (None, "tune", "tune", "tune", True),
    (None, "verify", "verify", "verify", True),
    ("runs", "list", "runs", "runs_list", False),
    ("runs", "show", "runs", "runs_show", False),
    ("runs", "prune", "runs", "runs_prune", False),
    ("runs", "rm", "runs", "runs_rm", False),
    ("runs", "report", "runs", "runs_report", False),
    ("runs", "push", "runs", "runs_push", False),
    ("bank", "restore", "bank", "bank_restore", False),
    ("bank", "best", "bank", "bank_best", False),
    ("bank", "publish", "releases", "bank_publish", False),
    ("bank", "pull", "releases", "bank_pull", False),
    ("bank", "rollback", "releases", "bank_rollback", False),
    ("bank", "versions", "releases", "bank_versions", False),
    ("bank", "show", "releases", "bank_show", False),
    ("bank", "diff", "releases", "bank_diff", False),
    ("store", "init", "store", "store_init", False),
    ("store", "status", "store", "store_status", False),
    ("store", "use", "store", "store_use", False),
    ("campaign", "check", "campaign", "campaign_check", False),
    ("campaign", "run", "campaign", "campaign_run", False),
    ("campaign", "status", "campaign", "campaign_status", False),
    ("campaign", "list", "campaign", "campaign_list", False),
)
GROUPS = {
    "runs": "The history of tuning runs.",
    "bank": "Knowledge banks: restored, compared, published as versions, pulled onto training hosts.",
    "store": "A run history shared by many hosts, on PostgreSQL.",
    "campaign": "Many tuning jobs from one file, on this host's NPUs or a cluster's, run on Ray.",
}


def application(path: Sequence[str] = ()) -> AoeTyper | None:
    """The command tree: every command, or only the one `path` names (a command, or a group and one of its
    commands; a group alone, or with a word that is none of its commands, has all of its own). None when `path`
    names no command or group."""
    import importlib

    first, second = (list(path) + [None, None])[:2]
    if first is not None and first not in GROUPS and all(group or name != first for group, name, *_ in COMMANDS):
        return None
    within = {name for group, name, *_ in COMMANDS if group == first}
    chosen = [
        entry
        for entry in COMMANDS
        if first is None
        or (entry[0] is None and entry[1] == first)
        or (entry[0] == first and (second not in within or entry[1] == second))
    ]
    app = _root_app()
    groups: dict[str, AoeTyper] = {}
    for group_name, name, module, function, script in chosen:
        callback = getattr(importlib.import_module(f"aoe_runner.cli.{module}"), function)
        if group_name is None:
            parent = app
        elif group_name in groups:
            parent = groups[group_name]
        else:
            parent = groups[group_name] = AoeTyper(name=group_name, help=GROUPS[group_name])
        parent.command(name, context_settings=SCRIPT_COMMAND if script else None)(callback)
    for group in groups.values():
        app.add_typer(group)
    return app


def _root_app() -> AoeTyper:
    app = AoeTyper(
        name="aoe-runner",
        help=ABOUT,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    return app


def whole_application() -> AoeTyper:
    """Every command (completion lists them all)."""
    whole = application()
    assert whole is not None  # an empty path names every command
    return whole


def __getattr__(name: str) -> AoeTyper:
    """`app`: the whole command tree, for library callers and tests."""
    if name == "app":
        return whole_application()
    raise AttributeError(name)


def _version(value: bool) -> None:
    if value:
        from aoe_runner.common.build_variant import variant

        terminal.result(f"aoe-runner {__version__} ({variant()})\n")
        raise typer.Exit(ExitCode.OK)


VersionFlag = Annotated[
    bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version and exit.")
]
StoreUrl = Annotated[
    str | None,
    typer.Option("--store", metavar="URL", help="The run store: postgresql://... or local [default: AOE_RUNNER_STORE]."),
]


Color = Annotated[
    str | None,
    typer.Option(
        "--color", metavar="WHEN", help="auto (on a terminal only), always or never [default: auto; NO_COLOR, FORCE_COLOR]."
    ),
]


Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Print results and errors only: no notes, no warnings.")]
Verbose = Annotated[
    bool, typer.Option("--verbose", "-v", help="More detail: every preflight check, which run store, what was read.")
]


ROOT_VALUE_OPTIONS = ("--store", "--color")  # the root options that take a value (a test checks the list)


def _root(
    version: VersionFlag = False, store: StoreUrl = None, color: Color = None, quiet: Quiet = False, verbose: Verbose = False
) -> None:
    """Preflight, supervise and report on Huawei AOE (Ascend Optimization Engine) tuning runs."""
    if quiet and verbose:
        raise UsageError("-q and -v ask for less and more: give one of them")
    terminal.quiet, terminal.verbose = quiet, verbose
    if color is not None:
        if color.strip().lower() not in colour.CHOICES:
            raise UsageError(f"--color: {color!r} is not one of {', '.join(colour.CHOICES)}")
        colour.choose(color.strip().lower())
    if store is not None:
        from aoe_runner.store.config import choose_store

        choose_store(store)
