"""Reading AOE result files: the normalised model and the tolerant loader."""

from aoe_runner.results.loader import find_result_files, load_all, load_result_file
from aoe_runner.results.model import (
    BasicInfo,
    ModelTimes,
    OpatSection,
    OperatorChange,
    Report,
    RepoSummary,
    ResultFile,
    SgatSection,
    SubgraphChange,
    TuningStatus,
    UpdateMode,
)

__all__ = [
    "BasicInfo",
    "ModelTimes",
    "OpatSection",
    "OperatorChange",
    "Report",
    "RepoSummary",
    "ResultFile",
    "SgatSection",
    "SubgraphChange",
    "TuningStatus",
    "UpdateMode",
    "find_result_files",
    "load_all",
    "load_result_file",
]
