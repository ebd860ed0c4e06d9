"""Timing model: when things happen (occupancy, pipelines, memory units); the functional core decides what."""
