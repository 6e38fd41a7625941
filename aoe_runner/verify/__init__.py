"""aoe-runner verify: does the tuned bank make training faster?"""
