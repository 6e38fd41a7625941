"""`aoe-runner report`: result files merged into the bank state they imply, summarised, diffed, cached (api.py)."""
