"""The command tree: the root options and every command, registered here in the order `--help` lists them."""

from __future__ import annotations

from typing import Annotated

import typer

from aoe_runner import __version__
from aoe_runner.cli import bank, completion, preflight, report, runs, store, tune, validate, verify
from aoe_runner.cli.click_glue import AoeTyper
from aoe_runner.cli.terminal import terminal
from aoe_runner.common import colour
from aoe_runner.errors import ExitCode, UsageError

SCRIPT_COMMAND = {"allow_interspersed_args": True}  # options may follow the script's path; its own arguments go after --

app = AoeTyper(
    name="aoe-runner",
    help="Preflight, supervise and report on Huawei AOE (Ascend Optimization Engine) tuning runs.",
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.command()(report.report)
app.command()(validate.validate)
app.command()(preflight.preflight)
app.command()(completion.completion)
app.command(context_settings=SCRIPT_COMMAND)(tune.tune)
app.command(context_settings=SCRIPT_COMMAND)(verify.verify)

runs_app = AoeTyper(name="runs", help="The history of tuning runs.")
for name, command in (("list", runs.runs_list), ("show", runs.runs_show), ("prune", runs.runs_prune), ("rm", runs.runs_rm),
                      ("report", runs.runs_report), ("push", runs.runs_push)):  # fmt: skip
    runs_app.command(name)(command)
bank_app = AoeTyper(name="bank", help="Knowledge banks recorded by tuning runs.")
bank_app.command("restore")(bank.bank_restore)
bank_app.command("best")(bank.bank_best)
store_app = AoeTyper(name="store", help="A run history shared by many hosts, on PostgreSQL.")
store_app.command("init")(store.store_init)
store_app.command("status")(store.store_status)
store_app.command("use")(store.store_use)
for group in (runs_app, bank_app, store_app):
    app.add_typer(group)


def _version(value: bool) -> None:
    if value:
        terminal.result(f"aoe-runner {__version__}\n")
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


@app.callback()
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
