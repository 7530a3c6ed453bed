"""agon-repro: reproduction pipeline for Agon (competitive cross-model RL)."""

__version__ = "0.1.0"
