"""The JSON Schemas, shipped inside the package as `aoe_runner.schemas` so `validate` finds them after any install."""
