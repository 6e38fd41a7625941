"""The local run history: manifests, the SQLite index, bank snapshots and restores, pruning."""
