"""Evaluation protocols (per-problem records) and the statistics derived from them."""
