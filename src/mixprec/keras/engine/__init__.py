"""Layer/model machinery: KerasTensor, Layer, Model, Sequential, Input."""
