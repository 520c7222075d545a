"""Analysis wing: Capture or arrays -> numbers. Never loads a model."""
