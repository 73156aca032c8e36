"""Keras saving: weights files (weights_io) shared by Model and the checkpoint code."""
