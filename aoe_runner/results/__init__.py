"""Reading AOE result files: the normalised model (`model`), the tolerant loader (`loader`), the fast path (`parsed`).

Nothing is imported here: `report` reads through `parsed` and its cache, and must not pay for pydantic (`model`),
which importing a submodule would otherwise load through this package.
"""
