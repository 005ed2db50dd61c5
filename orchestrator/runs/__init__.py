"""Runs (one load-generator execution at one level, or one accuracy pass) and their points."""
