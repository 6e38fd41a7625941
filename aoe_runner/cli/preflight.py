"""`aoe-runner preflight`: this host (or saved facts) against every documented AOE precondition."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aoe_runner.cli import completion
from aoe_runner.cli.options import (
    CSV,
    JSON,
    MARKDOWN,
    TABLE,
    JsonFlag,
    OutputFile,
    WideFlag,
    emit,
    format_option,
    framework_option,
    whole_number,
)
from aoe_runner.cli.pages import formatter_for
from aoe_runner.cli.terminal import terminal
from aoe_runner.errors import UsageError

if TYPE_CHECKING:
    from aoe_runner.frameworks.kinds import Framework

FORMATS = (TABLE, JSON, MARKDOWN, CSV)
Mode = Annotated[
    str | None,
    typer.Option(
        "--mode",
        metavar="MODE",
        help="op (also 2, opat) or subgraph (also 1, sgat) [default: from AOE_MODE, else op].",
        autocompletion=completion.MODES,
    ),
]
FrameworkOption = Annotated[str, framework_option("the training formulas; pytorch: the dump-then-tune ones")]
Model = Annotated[
    Path | None,
    typer.Option("--model", metavar="FILE", readable=False, help="Check for tuning this model file with the offline aoe CLI."),
]
Procs = Annotated[str, typer.Option("--procs", metavar="P", help="Training processes in the script, at least 1.")]
ModelMemory = Annotated[str | None, typer.Option("--model-memory", metavar="SIZE", help="Memory the model needs, e.g. 12GiB.")]
AoeIni = Annotated[
    Path | None,
    typer.Option("--aoe-ini", metavar="PATH", readable=False, help="aoe.ini to read [default: the documented places]."),
]
Soc = Annotated[str | None, typer.Option("--soc", metavar="NAME", help="SoC name, e.g. Ascend910B3 [default: npu-smi].")]
Format = Annotated[str | None, format_option(*FORMATS, notes=" (json: the facts and every check)")]
Strict = Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Show every check, and where each number came from.")]
SaveFacts = Annotated[
    str | None, typer.Option("--save-facts", metavar="FILE", help="Also write the host facts to FILE (- is stdout).")
]
Facts = Annotated[
    Path | None,
    typer.Option("--facts", metavar="FILE", readable=False, help="Check saved facts instead of measuring this host."),
]


def preflight(
    mode: Mode = None,
    framework: FrameworkOption = "auto",
    model: Model = None,
    procs: Procs = "1",
    model_memory: ModelMemory = None,
    aoe_ini: AoeIni = None,
    soc: Soc = None,
    output_format: Format = None,
    as_json: JsonFlag = False,
    output: OutputFile = None,
    wide: WideFlag = False,
    strict: Strict = False,
    save_facts: SaveFacts = None,
    facts_file: Facts = None,
    verbose: Verbose = False,
) -> int:
    """Check this host against every documented AOE precondition: formula, measured value and fix for each."""
    from aoe_runner.preflight.report import preflight_report, write_facts

    formatter = formatter_for(output_format, as_json, FORMATS, output, wide)
    processes = whole_number(procs, "--procs", minimum=1) or 1
    if facts_file is not None and (aoe_ini is not None or soc is not None):
        raise UsageError("--aoe-ini and --soc describe this host; they cannot change saved --facts")
    chosen, model_bytes = _scenario(framework, model)
    result = preflight_report(
        mode, processes, model_memory, aoe_ini=aoe_ini, soc=soc, facts_file=facts_file, framework=chosen,
        model_file_bytes=model_bytes,
    )  # fmt: skip
    if save_facts is not None:
        write_facts(result.facts, save_facts)
        terminal.info(f"wrote {save_facts}")
    emit(terminal, formatter.preflight(result, verbose or terminal.verbose), output)
    return result.exit_code(strict)


def _scenario(framework: str, model: Path | None) -> tuple[Framework | None, int | None]:
    """--framework (auto: none known, the training formulas) and --model's size (the offline scenario)."""
    from aoe_runner.errors import InputError
    from aoe_runner.frameworks.kinds import Framework

    chosen = Framework.parse(framework)
    if model is None:
        return chosen, None
    if chosen is not None:
        raise UsageError("--framework names a training script's framework; --model checks for a model file")
    if not model.is_file():
        raise InputError(str(model), "no such model file")
    return None, model.stat().st_size
