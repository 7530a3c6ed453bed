"""The toy world: generated problems and a tiny model trained from scratch on CPU."""
