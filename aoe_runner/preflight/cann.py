"""The CANN install as real hosts lay it out: version.cfg, ascend_toolkit_install.info, version.info and aoe.ini.

Layouts (AOE.md §5): up to CANN 8.3 `<root>/ascend-toolkit/{set_env.sh, latest -> <version>}` with
`<version>/version.cfg`, `<version>/<arch>-linux/ascend_toolkit_install.info` and the aoe.ini AOE ships in
`<version>/<arch>-linux/conf/aoe.ini`; from CANN 8.5 `<root>/cann-<version>` behind a `cann` link, with
`cann/set_env.sh`, `cann/<arch>-linux/ascend_toolkit_install.info` and (in the docs) `cann/conf/aoe.ini`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from aoe_runner.common.plain_data import FIELD_DOCSTRINGS
from aoe_runner.common.regular_files import read_with_status
from aoe_runner.errors import InputError

SET_ENV_SCRIPTS = ("ascend-toolkit/set_env.sh", "cann/set_env.sh")  # up to CANN 8.3, from 8.5
INSTALL_INFOS = ("ascend_toolkit_install.info", "*-linux/ascend_toolkit_install.info")
# aoe.ini: where a real install keeps it first, then where the docs say it is (up to 8.3, from 8.5)
_AOE_INI_UNDER_TOOLKIT = ("*-linux/conf/aoe.ini", "conf/aoe.ini", "tools/aoe/conf/aoe.ini")
_AOE_INI_UNDER_ROOT = (
    "ascend-toolkit/latest/*-linux/conf/aoe.ini",
    "cann/*-linux/conf/aoe.ini",
    "cann/conf/aoe.ini",
    "latest/tools/aoe/conf/aoe.ini",
    "ascend-toolkit/latest/tools/aoe/conf/aoe.ini",
)
_VERSION_CFG_KEY = re.compile(r"^\s*(\w+?)_(running|installed|upgrade)_version\s*=(.*)$", re.MULTILINE)
_PAIR = re.compile(r"\[([^\[\]:]*)(?::([^\[\]]*))?\]")
_KIND_RANK = {"running": 0, "installed": 1, "upgrade": 2}
_VERSION_TEXT = re.compile(r"\d[\w.\-]*")
_WORD_TEXT = re.compile(r"[\w.\-]+")


@dataclass(kw_only=True)
class CannEnvironment:
    __pydantic_config__ = FIELD_DOCSTRINGS

    toolkit_home: str | None
    """ASCEND_TOOLKIT_HOME or ASCEND_HOME_PATH, when set."""
    set_env_scripts: list[str]
    """set_env.sh files found at the documented places."""
    version: str | None
    """The release users know, e.g. 8.1.RC1 (in version.cfg, after the colon)."""
    version_file: str | None
    inner_version: str | None = None
    """The inner build number beside the release, e.g. 7.7.0.1.238 or V100R001C21SPC001B238."""
    version_key: str | None = None
    """The line or key the version was read from, e.g. toolkit_running_version."""
    driver_version: str | None = None
    """From driver/version.info under the Ascend install roots."""

    def describe(self) -> str:
        if self.version is None:
            return "not found"
        return f"{self.version} (inner {self.inner_version})" if self.inner_version else self.version


@dataclass(kw_only=True)
class AoeIni:
    __pydantic_config__ = FIELD_DOCSTRINGS

    path: str | None
    searched: list[str]
    tuning_parallel_num: str | None
    """TUNING_PARALLEL_NUM as written, when the file sets it."""
    error: str | None = None
    run_loop: str | None = None
    """RUN_LOOP as written, when the file sets it."""
    work_path: str | None = None
    """WORK_PATH as written (training ignores it from about CANN 8.2)."""
    also_found: list[str] = field(default_factory=list)
    """Other aoe.ini files at the searched places, not read."""


class Version(NamedTuple):
    release: str
    inner: str | None
    file: Path
    key: str


class IniValues(NamedTuple):
    tuning_parallel_num: str | None = None
    run_loop: str | None = None
    work_path: str | None = None
    error: str | None = None


def cann_environment(env: Mapping[str, str], roots: list[Path]) -> CannEnvironment:
    toolkit_home = env.get("ASCEND_TOOLKIT_HOME") or env.get("ASCEND_HOME_PATH")
    scripts = [root / script for root in roots for script in SET_ENV_SCRIPTS if (root / script).is_file()]
    places = [Path(toolkit_home)] if toolkit_home else []
    places += [script.parent / "latest" for script in scripts] + [script.parent for script in scripts]
    found = find_version(places)
    driver = find_version([root / "driver" for root in roots])
    return CannEnvironment(
        toolkit_home=toolkit_home,
        set_env_scripts=[str(script) for script in scripts],
        version=found.release if found else None,
        version_file=str(found.file) if found else None,
        inner_version=found.inner if found else None,
        version_key=found.key if found else None,
        driver_version=driver.release if driver else None,
    )


def find_version(places: Iterable[Path]) -> Version | None:
    """The first version found: per place, version.cfg, then ascend_toolkit_install.info, then version.info."""
    for place in places:
        if not place.is_dir():
            continue
        candidates = [place / "version.cfg", *(p for rel in INSTALL_INFOS for p in _matches(place, rel)), place / "version.info"]
        for candidate in candidates:
            found = read_version_file(candidate) if candidate.is_file() else None
            if found:
                return found
    return None


def read_version_file(path: Path) -> Version | None:
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return None
    if path.name == "version.cfg":
        return version_from_cfg(text, path) or version_from_info(text, path)
    return version_from_info(text, path)


def version_from_cfg(text: str, path: Path) -> Version | None:
    """`<component>_{running,installed,upgrade}_version=[<inner>:<release>]...`: running before installed before
    upgrade, the toolkit's before a component's. A line may hold several pairs: the last one written counts.
    A pair without a colon holds the release alone.
    """
    best: tuple[tuple[int, bool, int], Version] | None = None
    for order, match in enumerate(_VERSION_CFG_KEY.finditer(text)):
        component, kind, value = match.groups()
        pairs = _PAIR.findall(value)
        if not pairs:
            continue
        inner, release = pairs[-1]
        version = _version(release or inner, inner if release else None, path, f"{component}_{kind}_version")
        rank = (_KIND_RANK[kind], component != "toolkit", order)
        if version and (best is None or rank < best[0]):
            best = (rank, version)
    return best[1] if best else None


def version_from_info(text: str, path: Path) -> Version | None:
    """ascend_toolkit_install.info or version.info: `version=8.1.RC1`, `innerversion=...`, or `key : value`."""
    values = {key.lower(): value for key, value in read_key_values(text).items()}
    if "version" not in values:
        return None
    return _version(values["version"], values.get("innerversion"), path, "version")


def read_key_values(text: str) -> dict[str, str]:
    """`KEY=VALUE` or `key : value` lines, whichever separator comes first; NULs end a line; comments are skipped."""
    values: dict[str, str] = {}
    for line in re.split(r"[\r\n\x00]+", text):
        cut = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if cut > 0 and not line.lstrip().startswith("#"):
            values.setdefault(line[:cut].strip(), line[cut + 1 :].strip())
    return values


def _version(release: str, inner: str | None, path: Path, key: str) -> Version | None:
    """A version with junk after it cut off: `8.1.RC1 [root@host ~]#` is 8.1.RC1."""
    clean = _prefix(_VERSION_TEXT, release)
    return Version(release=clean, inner=_prefix(_WORD_TEXT, inner or "") or None, file=path, key=key) if clean else None


def _prefix(pattern: re.Pattern[str], text: str) -> str:
    match = pattern.match(text.strip())
    return match.group(0) if match else ""


def find_aoe_ini(explicit: Path | None, env: Mapping[str, str], roots: list[Path]) -> AoeIni:
    """The aoe.ini AOE reads: --aoe-ini, else the real places of an install first, then the documented ones."""
    places = [(explicit.parent, explicit.name)] if explicit is not None else _aoe_ini_places(env, roots)
    unique: dict[Path, Path] = {}
    for base, rel in places:
        for path in _matches(base, rel):
            if path.is_file():
                unique.setdefault(path.resolve(), path)
    searched = [str(base / rel) for base, rel in places]
    if not unique:
        error = f"{explicit}: no such file" if explicit is not None else None
        return AoeIni(path=None, searched=searched, tuning_parallel_num=None, error=error)
    chosen, *others = unique.values()
    values = read_aoe_ini(chosen)
    return AoeIni(
        path=str(chosen),
        searched=searched,
        tuning_parallel_num=values.tuning_parallel_num,
        error=values.error,
        run_loop=values.run_loop,
        work_path=values.work_path,
        also_found=[str(path) for path in others],
    )


def _aoe_ini_places(env: Mapping[str, str], roots: list[Path]) -> list[tuple[Path, str]]:
    toolkits = dict.fromkeys(Path(env[name]) for name in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH") if env.get(name))
    places = [(toolkit, rel) for toolkit in toolkits for rel in _AOE_INI_UNDER_TOOLKIT]
    return places + [(root, rel) for root in roots for rel in _AOE_INI_UNDER_ROOT]


def _matches(base: Path, rel: str) -> list[Path]:
    """base/rel, or every match of rel's wildcards in sorted order; base itself is taken literally."""
    return sorted(base.glob(rel)) if "*" in rel else [base / rel]


def read_aoe_ini(path: Path) -> IniValues:
    """WORK_PATH, TUNING_PARALLEL_NUM and RUN_LOOP from an aoe.ini, `[COMMON]` first, with or without a section."""
    import configparser  # here: a host without an aoe.ini starts without it

    parser = configparser.ConfigParser(
        comment_prefixes=("#", ";"), inline_comment_prefixes=("#", ";"), strict=False, interpolation=None
    )
    try:
        data = read_with_status(str(path))[0]  # a FIFO put in its place is refused, not waited on
    except InputError as error:
        return IniValues(error=f"{path}: {error.reason}")
    if b"\0" in data:
        return IniValues(error=f"{path}: not a text file (it holds NUL bytes); aoe.ini is KEY = value lines")
    text = data.decode("utf-8", errors="replace")
    try:
        parser.read_string(text if _starts_with_section(text) else "[COMMON]\n" + text)
    except configparser.Error as error:
        return IniValues(error=f"{path}: {_ini_problem(error, text, shifted=not _starts_with_section(text))}")
    sections = sorted(parser.sections(), key=lambda name: name.upper() != "COMMON")

    def value(key: str) -> str | None:
        return next((parser.get(s, key).strip() for s in sections if parser.has_option(s, key)), None)

    return IniValues(tuning_parallel_num=value("TUNING_PARALLEL_NUM"), run_loop=value("RUN_LOOP"), work_path=value("WORK_PATH"))


def _ini_problem(error: Exception, text: str, shifted: bool) -> str:
    """What is wrong with an aoe.ini, in our words: configparser's name for its input ('<string>') means nothing here."""
    import configparser

    if isinstance(error, configparser.ParsingError) and error.errors:
        number = error.errors[0][0] - (1 if shifted else 0)
        lines = text.splitlines()
        shown = lines[number - 1].strip()[:60].replace("\ufffd", "?") if 0 < number <= len(lines) else ""
        return f"line {number} is neither a [SECTION] header nor KEY = value: {shown!r}"
    return f"not an ini file that AOE can read ({type(error).__name__})"


def _starts_with_section(text: str) -> bool:
    first = next((line.strip() for line in text.splitlines() if line.strip() and line.strip()[0] not in "#;"), "")
    return first.startswith("[")
