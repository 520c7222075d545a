"""Models wing: names -> loaded models (``zoo``: the registry, devices, random twins), the embedded models' files
(``embedded``: GGUF dequantised once into a cached folder), folders loaded strictly (``weights``), planted models
with a known phase (``planted``) and where each architecture keeps its parts (``anatomy``)."""

from .anatomy import Anatomy, anatomy_of
from .zoo import LoadedModel, load_model, models

# ``planted``, ``planted_flow``, ``planted_spread``: modules, imported on first use (``from latentbook.models import
# planted``), not here: ``import latentbook`` stays light.
__all__ = [
    "Anatomy",
    "LoadedModel",
    "anatomy_of",
    "load_model",
    "models",
    "planted",
    "planted_flow",
    "planted_spread",
]
