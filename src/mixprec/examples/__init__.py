"""Runnable examples: ``python -m mixprec.examples.mixed_precision_guide``."""
