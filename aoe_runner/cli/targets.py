"""What `tune` is to tune: a script and the framework that switches AOE on in it, or a model file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aoe_runner.errors import UsageError
from aoe_runner.frameworks.kinds import Framework
from aoe_runner.frameworks.offline import OfflineModel


@dataclass(frozen=True)
class Target:
    script: Path  # the model file for --model
    framework: Framework | None  # None for --model
    source: str  # how the framework was chosen: --framework, or what the script imports
    model: OfflineModel | None = None

    def describe(self) -> str:
        if self.model is not None:
            return self.model.describe()
        framework = self.framework.value if self.framework else "?"
        if self.source == "--framework":
            return f"framework: {framework} (--framework)"
        return f"framework: {framework} ({self.source}; --framework to choose another)"


def tune_target(
    script: Path | None,
    arguments: list[str] | None,
    model: Path | None,
    weight: Path | None,
    model_framework: str | None,
    framework: str,
) -> Target:
    """The script and its framework (`auto`: frameworks.detect), or the model file; UsageError for a mix of the two."""
    if model is not None:
        if script is not None or arguments:
            raise UsageError("--model tunes a model file: give no SCRIPT (nor script arguments) with it")
        if framework.strip().lower() != "auto":
            raise UsageError("--framework names a training script's framework; a model's is --model-framework")
        from aoe_runner.frameworks.offline import offline_model

        offline = offline_model(model, model_framework, weight)
        return Target(offline.path, None, offline.framework_source, offline)
    if script is None:
        raise UsageError("tune needs a SCRIPT to run, or --model FILE")
    for option, value in (("--weight", weight), ("--model-framework", model_framework)):
        if value is not None:
            raise UsageError(f"{option} goes with --model")
    chosen = Framework.parse(framework)
    if chosen is not None:
        return Target(script, chosen, "--framework")
    if not script.is_file():  # said as the run would say it, before the imports are read
        from aoe_runner.errors import InputError

        raise InputError(str(script), "no such training script")
    from aoe_runner.frameworks.detect import detect_framework

    detection = detect_framework(script)
    return Target(script, detection.framework, detection.evidence)
