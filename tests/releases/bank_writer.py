"""A training script that tunes nothing: it writes the files its arguments name into $TUNE_BANK_PATH, as AOE would
write a bank. `bank_writer.py PATH=TEXT ...`; TEXT `-` removes PATH."""

import os
import sys
from pathlib import Path

bank = Path(os.environ["TUNE_BANK_PATH"])
for argument in sys.argv[1:]:
    path, _, text = argument.partition("=")
    target = bank / path
    if text == "-":
        target.unlink()
        continue
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
