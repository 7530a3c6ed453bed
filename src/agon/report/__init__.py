"""Tables and figures, computed only from per-problem result files."""
