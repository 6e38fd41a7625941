"""Click's exception classes, wherever this typer keeps them (typer >= 0.26 vendors click as typer._click)."""

try:
    from typer._click import exceptions as click_exceptions
except ImportError:  # typer that depends on the click package
    from click import exceptions as click_exceptions  # type: ignore[no-redef]

__all__ = ["click_exceptions"]
