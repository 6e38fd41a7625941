"""Published bank versions as tables, CSV rows and text: `bank versions`, `bank show` and `bank diff`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aoe_runner.common.safe_text import visible
from aoe_runner.common.words import size_text
from aoe_runner.render.campaigns import rows_table
from aoe_runner.render.numbers import local_time

if TYPE_CHECKING:
    from aoe_runner.releases.api import VersionDiff
    from aoe_runner.releases.version import BankVersion, Proof
    from aoe_runner.runs.manifest import BankFile

VERSION_COLUMNS = ("version", "published", "from", "host", "fingerprint", "verified", "files", "size", "note")
LEFT_OUT_TO_FIT = ("note", "host", "size", "files", "published")  # in this order, on a narrow terminal


def version_rows(versions: list[BankVersion]) -> list[dict[str, Any]]:
    return [
        {
            "version": version.label,
            "published": version.published_at.isoformat(timespec="seconds"),
            "from": [source.run for source in version.sources],
            "host": version.host,
            "fingerprint": _fingerprint(version),
            "verified": _verified(version),
            "speedup": [proof.speedup for proof in version.proofs],
            "speedup_ci": [[proof.ci_low, proof.ci_high] for proof in version.proofs],
            "files": version.files,
            "bytes": version.bytes,
            "note": version.note,
        }
        for version in versions
    ]


def versions_text(versions: list[BankVersion], markdown: bool = False, width: int | None = None) -> str:
    if not versions:
        return "no bank versions published (aoe-runner bank publish RUN --name NAME publishes one)\n"
    rows = []
    for row in version_rows(versions):
        cells = {key: str(value) if value is not None else "" for key, value in row.items()}
        cells.update({"from": " ".join(row["from"]), "size": size_text(row["bytes"]), "published": local_time(row["published"])})
        rows.append(cells)
    return rows_table(VERSION_COLUMNS, rows, markdown, width, optional=LEFT_OUT_TO_FIT)


def version_text(version: BankVersion, files: list[BankFile]) -> str:
    lines = [
        f"{version.label}  published {version.published_at.isoformat(timespec='seconds')} on {version.host}",
        f"  fingerprint  {_fingerprint(version)}",
        f"  verified     {_verified(version)}",
    ]
    lines += [f"  from         run {source.run} on {source.host} ({source.bank})" for source in version.sources]
    lines += [f"  proof        verification {p.verification} of run {p.run}: {_proof(p)}" for p in version.proofs]
    if version.preferred:
        lines.append(f"  preferred    run {version.preferred} where the runs differ")
    if version.note:
        lines.append(f"  note         {version.note}")
    lines.append(f"  contents     {len(files)} files, {size_text(version.bytes)}")
    lines += [f"  left out     {why}" for why in version.left_out]
    lines += [f"    {file.path}" + (f" -> {file.link}" if file.link else f"  {file.size}  {file.sha256[:12]}") for file in files]
    return "\n".join(map(visible, lines)) + "\n"


def diff_text(diff: VersionDiff) -> str:
    lines = [f"{diff.older} -> {diff.newer}: {len(diff.added)} added, {len(diff.removed)} removed, {len(diff.changed)} changed"]
    lines += [f"  added    {path}" for path in diff.added]
    lines += [f"  removed  {path}" for path in diff.removed]
    lines += [f"  changed  {path}" for path in diff.changed]
    if diff.operators:
        lines.append(f"recorded speed-ups ({diff.older} / {diff.newer}):")
        for row in diff.operators:
            older, newer = (_times(row[label]) for label in (diff.older, diff.newer))
            lines.append(f"  {row['kind']:<9} {row['name']}  {older} / {newer}")
    return "\n".join(map(visible, lines)) + "\n"


def _fingerprint(version: BankVersion) -> str:
    print_ = version.fingerprint
    return f"{version.soc or 'SoC unknown'}, CANN {print_.cann_version or 'unknown'}, driver {print_.driver_version or 'unknown'}"


def _verified(version: BankVersion) -> str:
    if version.unverified:
        return "UNVERIFIED"
    return "; ".join(_proof(proof) for proof in version.proofs) or "-"


def _proof(proof: Proof) -> str:
    return f"{proof.speedup:.3f}x [{proof.ci_low:.3f}, {proof.ci_high:.3f}]"


def _times(value: object) -> str:
    return f"{value:.3f}x" if isinstance(value, float) else "-"
