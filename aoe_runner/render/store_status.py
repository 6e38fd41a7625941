"""`aoe-runner store status` as a person reads it: which store, whether it answers, what it holds, what to push."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aoe_runner.common.safe_text import visible
from aoe_runner.common.words import count

if TYPE_CHECKING:
    from aoe_runner.store.status import StoreStatus


def render_store_status(status: StoreStatus) -> str:
    lines = [f"store      {status.store} (chosen by {status.source})"]
    if not status.shared:
        lines.append(f"runs       {count(status.local_runs, 'run')} in this host's history ({status.home})")
        return "\n".join(map(visible, lines)) + "\n"
    if not status.reachable:
        lines.append(f"reachable  no: {status.problem}")
        lines.append(f"this host  {count(status.local_runs, 'run')} recorded here; reading commands read them meanwhile")
        return "\n".join(map(visible, lines)) + "\n"
    lines.append("reachable  yes")
    lines.append(f"runs       {count(status.runs or 0, 'run')} from {count(status.hosts or 0, 'host')}")
    push = "; 'aoe-runner runs push' sends them" if status.not_pushed else ""
    lines.append(f"this host  {count(status.local_runs, 'run')} recorded here, {status.not_pushed} not in the store{push}")
    return "\n".join(map(visible, lines)) + "\n"


def store_status_json(status: StoreStatus) -> str:
    import json
    from dataclasses import asdict

    return json.dumps({**asdict(status), "shared": status.shared}) + "\n"
