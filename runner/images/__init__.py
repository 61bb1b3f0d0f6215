"""The standard container image: its recipe, pinned digest, reproducible build and preparation."""
