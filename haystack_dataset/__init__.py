"""Haystack and PSG: panoptic scene graphs with explicit negative relation annotations, and their metrics."""
