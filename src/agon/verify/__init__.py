"""Answer verification: exact toy arithmetic here; math-verify and the code sandbox at paper scale."""
