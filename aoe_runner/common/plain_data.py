"""What aoe-runner's plain dataclasses share: the data the start-up-sensitive commands build is not pydantic models.

`preflight` and `tune` build host facts and check results on every call, and loading pydantic to do it costs more
than the checks themselves. Those records are stdlib dataclasses; pydantic still validates them where they are read
back (a saved facts file, a run manifest that embeds them) and writes their JSON and JSON Schema, reading each
field's description from the docstring under it.
"""

from __future__ import annotations

FIELD_DOCSTRINGS = {"use_attribute_docstrings": True}  # a dataclass's `__pydantic_config__`; a plain dict
