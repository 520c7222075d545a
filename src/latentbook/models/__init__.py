"""Models wing: names -> loaded models (the zoo) and where each architecture keeps its parts (anatomy)."""

from .anatomy import Anatomy, anatomy_of
from .zoo import LoadedModel, load_model, models

__all__ = ["Anatomy", "LoadedModel", "anatomy_of", "load_model", "models"]
