"""Campaigns: many tuning jobs on one host's NPUs or a cluster's, run on Ray and recorded."""
