"""aoe-runner: preflight, supervise and report on Huawei AOE tuning runs."""

__version__ = "0.1.0"
