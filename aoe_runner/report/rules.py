"""The numbers every summary is made by, whichever module builds it (merge, the legacy merger, the models)."""

from __future__ import annotations

from typing import Final

CONFLICT_TOLERANCE: Final = 0.02  # a later result this much slower than an earlier one from another file is a conflict
DEFAULT_MIN_GAIN_PCT: Final = 1.0  # a speed-up below this is "no real gain"
SUMMARY_SCHEMA_VERSION: Final = 1  # schemas/bank-summary.schema.json
DEFAULT_THRESHOLD_PCT: Final = 2.0  # report --diff: the smallest change of an after-time that counts
