"""The run history: manifests, the SQLite index, bank snapshots."""
