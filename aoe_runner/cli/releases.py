"""`aoe-runner bank publish|pull|rollback|versions|show|diff`: tuned banks released as numbered versions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aoe_runner.cli import completion
from aoe_runner.cli.options import CSV, JSON, MARKDOWN, TABLE, JsonFlag, OutputFile, emit, format_option
from aoe_runner.cli.pages import formatter_for
from aoe_runner.cli.terminal import run_store, terminal
from aoe_runner.common.words import count
from aoe_runner.errors import ExitCode, InputError

FORMATS = (TABLE, JSON, CSV, MARKDOWN)
Runs = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="RUN", help="The tuning run whose bank to publish.", show_default=False, autocompletion=completion.run_ids
    ),
]
From = Annotated[
    list[str] | None,
    typer.Option(
        "--from", metavar="RUN", help="A run whose bank goes into the version; repeat for several of one SoC.", show_default=False
    ),
]
Name = Annotated[str, typer.Option("--name", metavar="NAME", help="The bank's name: versions are NAME@1, NAME@2, ...")]
Note = Annotated[str | None, typer.Option("--note", metavar="TEXT", help="Said with the version wherever it is shown.")]
Unverified = Annotated[bool, typer.Option("--unverified", help="Publish without a passing verify; marked UNVERIFIED.")]
Prefer = Annotated[
    str | None,
    typer.Option("--prefer", metavar="RUN", help="Where two runs hold one file with different contents, this run's wins."),
]
MergeWithAoe = Annotated[
    bool, typer.Option("--merge-with-aoe", help="Combine the runs' banks with AOE's own merge tool (msoptune.py --merge).")
]
Soc = Annotated[
    str | None, typer.Option("--soc", metavar="SOC", help="Publish this SoC's operator files of a bank holding several.")
]
Version = Annotated[str, typer.Argument(metavar="NAME[@N]", help="A published version; NAME alone is its latest.")]
To = Annotated[
    Path, typer.Option("--to", metavar="PATH", help="The bank path training uses (TUNE_BANK_PATH): made a link to the version.")
]
AllowDrift = Annotated[bool, typer.Option("--allow-env-drift", help="Pull a version tuned on another SoC, CANN or driver.")]
KeepCache = Annotated[bool, typer.Option("--keep-kernel-cache", help="Do not clear ~/atc_data/kernel_cache/<soc>.")]
EnvFile = Annotated[
    Path | None, typer.Option("--env-file", metavar="FILE", help="Also write the training job's variables into FILE.")
]
Pulled = Annotated[Path, typer.Argument(metavar="PATH", help="A bank path that bank pull put a version at.")]
Name_ = Annotated[str | None, typer.Argument(metavar="NAME", help="Only this bank's versions.", show_default=False)]
Format = Annotated[str | None, format_option(*FORMATS, notes=" (json: one version per line)")]
Older = Annotated[str, typer.Argument(metavar="NAME@A", help="The older version.")]
Newer = Annotated[str, typer.Argument(metavar="NAME@B", help="The newer version.")]
ShowJson = Annotated[bool, typer.Option("--json", help="The version's record, and its files, as JSON.")]


def bank_publish(
    runs: Runs = None, from_runs: From = None, name: Name = "", note: Note = None, unverified: Unverified = False,
    prefer: Prefer = None, soc: Soc = None, merge_with_aoe: MergeWithAoe = False,
) -> int:  # fmt: skip
    """Publish the bank a tuning run left (verified by verify) as the next version of NAME."""
    from aoe_runner.releases.catalog import catalog
    from aoe_runner.releases.publish import PublishRequest, publish

    store = run_store()
    request = PublishRequest(tuple((runs or []) + (from_runs or [])), name, note, unverified, prefer, soc, merge_with_aoe)
    version = publish(store, catalog(store.home, terminal.warning), request)
    for why in version.left_out:
        terminal.warning(f"left out {why}")
    marked = " UNVERIFIED" if version.unverified else ""
    sources = ", ".join(source.run for source in version.sources)
    runs_word = "run" if len(version.sources) == 1 else "runs"
    terminal.result(f"published {version.label}{marked}: {count(version.files, 'file')} from {runs_word} {sources}\n")
    return ExitCode.OK


def bank_pull(
    version: Version, to: To, allow_env_drift: AllowDrift = False, keep_kernel_cache: KeepCache = False, env_file: EnvFile = None
) -> int:
    """Put a published version at PATH (a link swapped at once) and say what training needs to use it."""
    from aoe_runner.releases.api import check_env_file, environment_lines, pull, write_env_file
    from aoe_runner.releases.catalog import catalog
    from aoe_runner.releases.version import parse_reference

    if env_file is not None:
        check_env_file(env_file)
    store = run_store(reading=True)
    outcome = pull(store, catalog(store.home, terminal.warning), parse_reference(version), to, allow_env_drift, keep_kernel_cache)
    for note in outcome.notes:
        terminal.info(note)
    pulled = outcome.pulled
    said = "is in place already" if not pulled.changed else f"pulled into {pulled.directory}"
    terminal.info(f"{pulled.version} {said}; {pulled.path} leads to it")
    if env_file is not None:
        write_env_file(env_file, outcome.environment)
    terminal.result(environment_lines(outcome.environment))
    return ExitCode.OK


def bank_rollback(path: Pulled) -> int:
    """Switch a pulled PATH back to the version pulled before the one in place."""
    from aoe_runner.releases.api import rollback

    pulled = rollback(path)
    terminal.info(f"{pulled.path} leads to {pulled.version} again ({pulled.directory})")
    return ExitCode.OK


def bank_versions(name: Name_ = None, output_format: Format = None, as_json: JsonFlag = False, output: OutputFile = None) -> int:
    """Published versions: when, from which run and host, fingerprint, verified speed-up, size."""
    from aoe_runner.releases.catalog import catalog
    from aoe_runner.releases.version import check_name

    formatter = formatter_for(output_format, as_json, FORMATS, output)
    store = run_store(reading=True)
    published = catalog(store.home, terminal.warning)
    versions = published.versions(check_name(name) if name is not None else None)
    if name is not None and not versions:  # as bank show says of a name never published (a typo, say)
        names = sorted({version.name for version in published.versions()})
        raise InputError(name, f"no version of this bank is published (published: {', '.join(names) or 'none'})")
    emit(terminal, formatter.bank_versions(versions), output)
    return ExitCode.OK


def bank_show(version: Version, as_json: ShowJson = False) -> int:
    """One version: where it came from, its proof, and every file."""
    from aoe_runner.releases.api import version_files
    from aoe_runner.releases.catalog import catalog
    from aoe_runner.releases.version import parse_reference

    store = run_store(reading=True)
    found = catalog(store.home, terminal.warning).get(*parse_reference(version))
    files = version_files(store, found)
    if as_json:
        from aoe_runner.common.jsontext import dump_json

        terminal.result(dump_json({"version": found, "files": files}))
    else:
        from aoe_runner.render.releases import version_text

        terminal.result(version_text(found, files))
    return ExitCode.OK


def bank_diff(older: Older, newer: Newer, as_json: ShowJson = False) -> int:
    """Files added, removed and changed from NAME@A to NAME@B, and the speed-ups their runs recorded."""
    from aoe_runner.releases.api import diff_versions
    from aoe_runner.releases.catalog import catalog
    from aoe_runner.releases.version import parse_reference

    store = run_store(reading=True)
    versions = catalog(store.home, terminal.warning)
    diff = diff_versions(store, versions.get(*parse_reference(older)), versions.get(*parse_reference(newer)))
    if as_json:
        from aoe_runner.common.jsontext import dump_json

        terminal.result(dump_json(diff))
    else:
        from aoe_runner.render.releases import diff_text

        terminal.result(diff_text(diff))
    return ExitCode.OK
