"""Real Hugging Face Llama models with a phase, or one of its artefacts, planted at a chosen depth.

The end-to-end ground truth of the verdict (chapter 8): ``build(spec)`` makes a ``LlamaForCausalLM`` with a
word-level tokenizer over the words of the ``general`` prompts, and ``save(spec, folder)`` writes it as a local
folder that ``lb.load_model(folder)`` and ``latentbook capture FOLDER`` load like any user's model. The book's
capture -> measure -> rows code then judges it, so each verdict row is calibrated on the phenomenon and its
artefacts as they reach a real forward pass, not on planted values of its own statistic.

What is planted (``PLANTS``): the MLP of the decoder layer that ends at depth ``l* = round(gamma L)`` (so the
residual stream carries the change from depth ``l*`` on) is rebuilt as a *writer*: one hidden unit per word,
whose gate and up rows are that word's embedding direction (a matched filter: with the squared ReLU,
``relu(a cos)^2 a cos`` is large for the token itself and near 0 for the others; SiLU's ``silu(a cos) a cos``
leaks enough of 2,000 other words into each token to blur a one-hot code at width 128), and whose down column
is what the word writes:

- ``sparse_code`` (the paper's phenomenon): ``k`` coordinates chosen by the word's identity, random signs;
- ``class_code``: the same with one code per class of words (``n_classes`` prototypes: mixture spikes);
- ``massive``: one coordinate shared by every word, its size varying by word (a massive activation, Sun et al.
  2024);
- ``rogue``: ``n_rogue`` fixed coordinates with Gaussian values per word (rogue dimensions: high variance),
  which the norms of the later layers give no weight (variance that nothing reads);
- ``sink_only``: a sparse code written at the first token (``<bos>``) only;
- ``rotated_code``: ``sparse_code`` in a random orthonormal basis (the same geometry; Omega cannot see it);
- ``atom_code``: ``k`` of ``n_atoms`` random orthonormal directions of the stream, random signs (few atoms, off the
  axes: features in superposition, the code a basis learned from the tokens can find, ``analysis.learned_basis``);
- ``norm_growth``: no writer; the layers from ``l*`` on write ``growth_factor`` times more (the norm grows);
- ``none``: the base model alone (a random twin when built with another seed).

Heavy tails and outliers with no object in them (issue 54: what the coordinate-basis Omega rows could mistake for
objects), each word writing a dense vector whose coordinates are drawn i.i.d. and scaled to unit norm:

- ``laplace``, ``t3`` (Student-t, 3 degrees of freedom) and ``gated`` (a Gaussian times the SiLU of another, as a
  SwiGLU MLP writes);
- ``outlier_features``: ``N_OUTLIERS`` fixed coordinates, one sign each, written by the words that make up a
  random 25-40 % of the prompts' tokens (the outlier features of LLM.int8, Dettmers et al. 2022);
- ``redrawn_code``: a sparse code of ``k`` coordinates drawn afresh for every token at every forward pass (the
  marginals of ``sparse_code``, no identity). No fixed weights do this: a forward hook on the MLP of layer ``l*``
  adds it, so the model exists in memory only (``save`` refuses it).

``strength`` is the norm of what is written over the residual stream's median norm at that depth (measured by
a forward pass on the ``general`` prompts). Nuisances of real models, off by default: ``sink`` (the first token
carries a massive coordinate from depth 1 on), ``massive`` (one coordinate ``massive_size`` times the median
coordinate in every token from depth 1 on) and ``growth`` (each layer writes ``growth`` times more than the
one before). The base weights are transformers' random initialisation with embeddings of unit scale, so the
token's identity is still in the residual stream where the writer reads it.
Introduced in: chapter 8 (the end-to-end calibration).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInputError

if TYPE_CHECKING:
    from .zoo import LoadedModel

PLANTS = (
    "sparse_code",
    "class_code",
    "massive",
    "rogue",
    "sink_only",
    "rotated_code",
    "norm_growth",
    "none",
    "laplace",
    "t3",
    "gated",
    "outlier_features",
    "redrawn_code",
    "atom_code",
)
HEAVY_TAILS = ("laplace", "t3", "gated")
N_OUTLIERS = 6  # outlier_features: coordinates
OUTLIER_SHARE = (0.25, 0.40)  # outlier_features: the share of the prompts' tokens whose words write them
SPEC_FILE = "planted.json"  # what was planted, beside config.json in a saved folder
SPECIALS = ("<pad>", "<unk>", "<bos>")
N_WORDS = 2000  # the most frequent words of the general prompts (88 % of their words); the rest are <unk>
_WORD = re.compile(r"[a-z]+|[0-9]+|[^\sa-z0-9]")


@dataclass(frozen=True)
class PlantSpec:
    """What one planted model is: its shape, the plant, its depth and size, and the nuisances it carries."""

    plant: str = "sparse_code"
    gamma: float = 0.42  # the depth where the change appears, as a fraction of the layers
    n_layers: int = 12
    d: int = 256
    seed: int = 0
    strength: float = 2.0  # norm written / median residual norm at that depth
    k: int = 8  # coordinates of a sparse code (atoms of an atom code)
    n_atoms: int = 32  # atom_code: the directions its code is written in
    n_classes: int = 4  # class_code: prototypes
    n_rogue: int = 3  # rogue: coordinates
    growth_factor: float = 6.0  # norm_growth: how much more the later layers write
    sink: bool = False  # nuisance: a massive coordinate on the first token from depth 1 on
    massive: bool = False  # nuisance: a massive coordinate in every token from depth 1 on
    massive_size: float = 50.0  # the nuisance's size, in median coordinate magnitudes
    growth: float = 1.0  # nuisance: layer l writes growth**l times more

    def __post_init__(self) -> None:
        if self.plant not in PLANTS:
            raise InvalidInputError(f"plant must be one of {PLANTS}, got {self.plant!r}.")
        if not (isinstance(self.n_layers, int) and 4 <= self.n_layers <= 64):
            raise InvalidInputError(f"n_layers must be an integer in 4..64, got {self.n_layers!r}.")
        if not (isinstance(self.d, int) and 32 <= self.d <= 2048 and self.d % 16 == 0):
            raise InvalidInputError(f"d must be a multiple of 16 in 32..2048, got {self.d!r}.")
        if not 0 < self.gamma <= 1:
            raise InvalidInputError(f"gamma must lie in (0, 1], got {self.gamma!r}.")
        if not 1 <= self.k <= self.d // 2 or not 1 <= self.n_rogue <= self.d // 2:
            raise InvalidInputError(f"k and n_rogue must lie in 1..d/2 = {self.d // 2}.")
        if self.plant == "atom_code" and not self.k < self.n_atoms <= self.d:
            raise InvalidInputError(
                f"an atom code needs k < n_atoms <= d, got k = {self.k}, n_atoms = {self.n_atoms}, d = {self.d}."
            )
        if self.strength <= 0 or self.growth <= 0 or self.growth_factor <= 0 or self.massive_size <= 0:
            raise InvalidInputError("strength, growth, growth_factor and massive_size must be positive.")

    @property
    def depth(self) -> int:
        """``l* = round(gamma L)``, at least 1: the first depth whose residual stream holds the change."""
        return max(1, int(round(self.gamma * self.n_layers)))

    @property
    def name(self) -> str:
        nuisances = "".join(s for s, on in (("+sink", self.sink), ("+massive", self.massive)) if on)
        nuisances += f"+growth{self.growth:g}" if self.growth != 1 else ""
        return f"planted-{self.plant}-g{self.gamma:.2f}-L{self.n_layers}-d{self.d}-s{self.seed}{nuisances}"


def words(text: str) -> list[str]:
    """The tokenizer's split: lower-cased runs of letters, runs of digits, and single other characters."""
    return _WORD.findall(text.lower())


@lru_cache(maxsize=4)
def vocabulary(n_words: int = N_WORDS) -> tuple[str, ...]:
    """``SPECIALS`` then the ``n_words`` most frequent words of the ``general`` prompts (ties by first use)."""
    from ..prompts import load

    counts = Counter(w for text in load("general") for w in words(text))
    return (*SPECIALS, *(w for w, _ in counts.most_common(n_words)))


def build_tokenizer(vocab: tuple[str, ...]):
    """A word-level ``PreTrainedTokenizerFast``: lower-cases, splits as ``words``, prepends ``<bos>``."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    ids = {w: i for i, w in enumerate(vocab)}
    core = Tokenizer(models.WordLevel(vocab=ids, unk_token="<unk>"))
    core.normalizer = normalizers.Lowercase()
    # whitespace is dropped first: "isolated" keeps the text between matches, so a space would be a <unk> token
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(_WORD.pattern), behavior="isolated")]
    )
    core.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A <bos> $B", special_tokens=[("<bos>", ids["<bos>"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token="<bos>", pad_token="<pad>", unk_token="<unk>", padding_side="right"
    )


def _config(spec: PlantSpec, vocab_size: int):
    from transformers import LlamaConfig

    heads = max(2, spec.d // 64)
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=spec.d,
        intermediate_size=max(vocab_size, 8 * spec.d // 3),
        hidden_act="relu2",  # the writer's matched filter: a cubic response keeps other words out of a code
        num_hidden_layers=spec.n_layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        bos_token_id=SPECIALS.index("<bos>"),
        pad_token_id=SPECIALS.index("<pad>"),
        eos_token_id=None,
    )


def _sparse_rows(n: int, d: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` unit vectors, each ``k`` random coordinates of magnitude ``1 / sqrt(k)`` with random signs."""
    rows = np.zeros((n, d))
    for row in rows:
        row[rng.choice(d, k, replace=False)] = rng.choice([-1.0, 1.0], k) / np.sqrt(k)
    return rows


def _heavy_tailed_rows(kind: str, n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` unit vectors of i.i.d. coordinates: Laplace, Student-t (3 df) or ``g * silu(g')`` (Gaussians)."""
    if kind == "laplace":
        rows = rng.laplace(size=(n, d))
    elif kind == "t3":
        rows = rng.standard_t(3, size=(n, d))
    else:
        g, gate = rng.standard_normal((2, n, d))
        rows = g * gate / (1 + np.exp(-gate))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@lru_cache(maxsize=1)
def _token_counts(n_words: int = N_WORDS) -> np.ndarray:
    """How often each word of ``vocabulary(n_words)`` occurs in the ``general`` prompts (0 for the specials)."""
    from ..prompts import load

    counts = Counter(w for text in load("general") for w in words(text))
    return np.array([counts.get(w, 0) for w in vocabulary(n_words)], dtype=float)


def _outlier_rows(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """Rows writing ``N_OUTLIERS`` fixed coordinates (a sign each, sizes varying by word) for the words, taken in
    a random order, that make up a share of the prompts' tokens drawn from ``OUTLIER_SHARE``; zeros for the rest."""
    dims = rng.choice(d, N_OUTLIERS, replace=False)
    signs = rng.choice([-1.0, 1.0], N_OUTLIERS)
    counts = _token_counts()
    counts = counts if len(counts) == n else np.ones(n)
    order = rng.permutation(n)
    share = rng.uniform(*OUTLIER_SHARE)
    chosen = order[: int(np.searchsorted(np.cumsum(counts[order]) / counts.sum(), share)) + 1]
    rows = np.zeros((n, d))
    rows[np.ix_(chosen, dims)] = signs * np.exp(0.25 * rng.standard_normal((len(chosen), N_OUTLIERS)))
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=rows, where=norms > 0)


def nuisance_dims(spec: PlantSpec) -> np.ndarray:
    """The coordinates of the nuisances: ``[massive, sink]`` (drawn from the seed, used when switched on)."""
    return np.random.default_rng([spec.seed, 2]).choice(spec.d, 2, replace=False)


def written(spec: PlantSpec, vocab_size: int) -> np.ndarray | None:
    """What each word writes at depth ``l*`` (``(vocab_size, d)``, unit rows or zeros; drawn from the seed), None
    for no writer."""
    d, bos, rng = spec.d, SPECIALS.index("<bos>"), np.random.default_rng([spec.seed, 1])
    if spec.plant in ("none", "norm_growth", "redrawn_code"):
        return None
    if spec.plant in ("sparse_code", "rotated_code"):
        rows = _sparse_rows(vocab_size, d, spec.k, rng)
        if spec.plant == "rotated_code":
            rotation, _ = np.linalg.qr(rng.standard_normal((d, d)))
            rows = rows @ rotation
    elif spec.plant == "atom_code":
        atoms, _ = np.linalg.qr(rng.standard_normal((d, spec.n_atoms)))  # (d, n_atoms), orthonormal columns
        rows = _sparse_rows(vocab_size, spec.n_atoms, spec.k, rng) @ atoms.T
    elif spec.plant == "class_code":
        prototypes = _sparse_rows(spec.n_classes, d, spec.k, rng)
        rows = prototypes[rng.integers(spec.n_classes, size=vocab_size)]
    elif spec.plant == "massive":
        rows = np.zeros((vocab_size, d))
        rows[:, rng.integers(d)] = np.exp(0.5 * rng.standard_normal(vocab_size))  # sizes vary by word
    elif spec.plant in HEAVY_TAILS:
        rows = _heavy_tailed_rows(spec.plant, vocab_size, d, rng)
    elif spec.plant == "outlier_features":
        rows = _outlier_rows(vocab_size, d, rng)
    elif spec.plant == "rogue":
        rows = np.zeros((vocab_size, d))
        dims = rng.choice(d, spec.n_rogue, replace=False)
        rows[:, dims] = rng.standard_normal((vocab_size, spec.n_rogue)) / np.sqrt(spec.n_rogue)
    else:  # sink_only
        rows = np.zeros((vocab_size, d))
        rows[bos] = _sparse_rows(1, d, spec.k, rng)[0]
    rows[SPECIALS.index("<pad>")] = 0.0
    return rows


def build(spec: PlantSpec) -> LoadedModel:
    """The planted model of ``spec``, in memory and in eval mode (``save`` writes it as a folder)."""
    import torch
    from transformers import LlamaForCausalLM

    from ..prompts import load
    from .zoo import _finish

    vocab = vocabulary()
    tokenizer = build_tokenizer(vocab)
    config = _config(spec, len(vocab))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        model = LlamaForCausalLM(config).float().eval().requires_grad_(False)
    layers = model.model.layers
    with torch.no_grad():
        model.model.embed_tokens.weight.normal_(0.0, 1.0, generator=torch.Generator().manual_seed(spec.seed))
        for index, layer in enumerate(layers):
            scale = spec.growth**index
            if spec.plant == "norm_growth" and index >= spec.depth - 1:
                scale *= spec.growth_factor
            layer.self_attn.o_proj.weight.mul_(scale)
            layer.mlp.down_proj.weight.mul_(scale)
    loaded = _finish(model, tokenizer, spec.name, "causal", json.dumps(asdict(spec), sort_keys=True))
    texts = load("general", limit=32)
    bos = SPECIALS.index("<bos>")
    embeddings = model.model.embed_tokens.weight.detach().double().numpy()
    shared = nuisance_dims(spec)
    if spec.sink or spec.massive:
        rows = np.zeros((len(vocab), spec.d))
        if spec.massive:
            rows[:, shared[0]] = 1.0
        if spec.sink:
            rows[bos, shared[1]] = 1.0
        _plant_writer(loaded, 0, embeddings, rows, spec.massive_size / np.sqrt(spec.d), texts)
    rows = written(spec, len(vocab))
    if rows is not None:
        # the writer reads past the nuisance coordinates, as real models' norms damp their massive dimensions,
        # and its strength is relative to the rest of the residual stream
        embeddings[:, shared] = 0.0
        _plant_writer(loaded, spec.depth - 1, embeddings, rows, spec.strength, texts, ignore=shared)
    if spec.plant == "redrawn_code":
        embeddings[:, shared] = 0.0
        _plant_redrawn_code(loaded, spec, texts, ignore=shared)
    if spec.plant == "rogue":
        # rogue coordinates carry variance, not computation: the later layers' norms give them no weight, so
        # random layers do not spread a three-dimensional code of each word into every coordinate
        rogue = torch.from_numpy(np.flatnonzero(np.any(rows != 0, axis=0)))
        with torch.no_grad():
            for layer in layers[spec.depth :]:
                layer.input_layernorm.weight[rogue] = 0.0
                layer.post_attention_layernorm.weight[rogue] = 0.0
    return loaded


def _plant_writer(
    loaded: LoadedModel,
    index: int,
    embeddings: np.ndarray,
    rows: np.ndarray,
    strength: float,
    texts: list[str],
    ignore: np.ndarray | None = None,
) -> None:
    """Rebuild the MLP of decoder layer ``index`` as a writer of ``rows`` (one hidden unit per word).

    Unit ``i``'s gate and up rows are ``e_i / ||e_i||`` (the word's embedding direction); a forward pass on
    ``texts`` then measures each unit's activation at its own word and the residual's median norm at the
    layer's input (without the coordinates ``ignore``), so that unit ``i`` writes ``strength * median norm *
    rows[i]`` where its word stands.
    """
    import torch

    mlp = loaded.model.model.layers[index].mlp
    vocab_size, d = rows.shape
    direction = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    live = np.linalg.norm(rows, axis=1) > 0
    gate = np.zeros((mlp.gate_proj.weight.shape[0], d))
    gate[:vocab_size][live] = direction[live]
    with torch.no_grad():
        mlp.gate_proj.weight.copy_(torch.from_numpy(gate))
        mlp.up_proj.weight.copy_(torch.from_numpy(gate))
        mlp.down_proj.weight.zero_()
    activation, norm = _own_activation(loaded, index, texts, live, ignore)
    down = np.zeros((d, mlp.down_proj.weight.shape[1]))
    down[:, :vocab_size] = (strength * norm * rows / activation[:, None]).T
    with torch.no_grad():
        mlp.down_proj.weight.copy_(torch.from_numpy(down))


def _plant_redrawn_code(loaded: LoadedModel, spec: PlantSpec, texts: list[str], ignore: np.ndarray) -> None:
    """A forward hook on the MLP of layer ``l* - 1`` adding, at every token of every forward pass, ``k`` random
    coordinates of size ``strength * median norm / sqrt(k)`` with random signs (the median norm of the residual
    entering that layer without the coordinates ``ignore``, as ``_plant_writer`` reads it); drawn from a generator
    seeded by the spec, so the same passes in the same order draw the same codes."""
    import torch

    index = spec.depth - 1
    scale = spec.strength * _input_norm(loaded, index, texts, ignore) / np.sqrt(spec.k)
    generator = torch.Generator().manual_seed(spec.seed)

    def add_code(_module, _args, output):
        shape = output.shape
        coordinates = torch.rand(shape, generator=generator).argsort(dim=-1)[..., : spec.k]
        signs = torch.randint(0, 2, (*shape[:-1], spec.k), generator=generator) * 2.0 - 1.0
        code = torch.zeros(shape, dtype=output.dtype).scatter_(
            -1, coordinates, scale * signs.to(output.dtype)
        )
        return output + code.to(output.device)

    loaded.model.model.layers[index].mlp.register_forward_hook(add_code)


def _input_norm(loaded: LoadedModel, index: int, texts: list[str], ignore: np.ndarray) -> float:
    """The median norm of the residual stream entering decoder layer ``index`` (without the coordinates
    ``ignore``) over the tokens of ``texts``."""
    import torch

    layer = loaded.model.model.layers[index]
    seen: dict[str, torch.Tensor] = {}

    def read_input(_module, args):
        seen["h"] = args[0].detach()
        raise _Seen

    hook = layer.register_forward_pre_hook(read_input)
    batch = loaded.tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=64)
    try:
        with torch.no_grad():
            loaded.model(**batch)
    except _Seen:
        pass
    finally:
        hook.remove()
    h = seen["h"][batch["attention_mask"].bool()]
    h[:, torch.from_numpy(np.asarray(ignore))] = 0.0
    return float(h.norm(dim=-1).median())


class _Seen(Exception):
    """Raised by a hook once the writer's activations are read: ends the calibration forward pass early."""


def _own_activation(
    loaded: LoadedModel, index: int, texts: list[str], live: np.ndarray, ignore: np.ndarray | None = None
):
    """Each live unit's median activation at its own word (the median over live units where a word is unseen
    or barely fires; 1 for units that write nothing) and the median norm of the residual stream entering layer
    ``index`` (without the coordinates ``ignore``), over the tokens of ``texts``."""
    import torch

    layer = loaded.model.model.layers[index]
    seen: dict[str, torch.Tensor] = {}

    def read_activation(_module, args):
        seen["a"] = args[0].detach()
        raise _Seen  # nothing past this layer is needed

    hooks = [
        layer.register_forward_pre_hook(lambda _m, args: seen.__setitem__("h", args[0].detach())),
        layer.mlp.down_proj.register_forward_pre_hook(read_activation),
    ]
    batch = loaded.tokenizer(texts, return_tensors="pt", padding=True, truncation=True, max_length=64)
    try:
        with torch.no_grad():
            loaded.model(**batch)
    except _Seen:
        pass
    finally:
        for hook in hooks:
            hook.remove()
    mask = batch["attention_mask"].bool()
    ids = batch["input_ids"][mask].numpy()
    own = seen["a"][mask][torch.arange(len(ids)), torch.from_numpy(ids)].double().numpy()
    per_unit = np.full(len(live), np.nan)
    for word in np.unique(ids):
        per_unit[word] = np.median(own[ids == word])
    per_unit[~live] = np.nan
    fallback = float(np.nanmedian(per_unit))
    if not fallback > 0:
        raise InvalidInputError("No writing unit fired at its own word: the prompts hold none of its words.")
    per_unit = np.where(np.isfinite(per_unit) & (per_unit > 0.1 * fallback), per_unit, fallback)
    h = seen["h"][mask]
    if ignore is not None:
        h[:, torch.from_numpy(np.asarray(ignore))] = 0.0
    return np.where(live, per_unit, 1.0), float(h.norm(dim=-1).median())


def save(spec: PlantSpec, folder: str | Path) -> Path:
    """Write the planted model of ``spec`` to ``folder`` (config, safetensors, tokenizer and ``planted.json``),
    atomically: a temporary sibling folder, then a rename. An existing folder is refused."""
    import os
    import shutil

    folder = Path(folder)
    if spec.plant == "redrawn_code":
        raise InvalidInputError(
            "A redrawn code is drawn by a forward hook at every pass, which no saved weights hold: use build(spec)."
        )
    if folder.exists():
        raise InvalidInputError(f"{folder} already exists: choose a new folder for the planted model.")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    loaded = build(spec)
    try:
        loaded.model.save_pretrained(tmp, safe_serialization=True)
        loaded.tokenizer.save_pretrained(tmp)
        (tmp / SPEC_FILE).write_text(json.dumps(asdict(spec), indent=1), encoding="utf-8")
        os.rename(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def twin_spec(spec: PlantSpec) -> PlantSpec:
    """The random twin of a planted model: the same shape, another seed, nothing planted and no nuisances (a
    random-weight model has no massive coordinates, so the twin explains none of them away)."""
    return replace(spec, plant="none", seed=spec.seed + 10_000, sink=False, massive=False, growth=1.0)


def load_spec(folder: str | Path) -> PlantSpec:
    """The ``PlantSpec`` saved beside a planted model."""
    path = Path(folder) / SPEC_FILE
    if not path.is_file():
        raise InvalidInputError(f"{path} does not exist: {folder} is not a planted model folder.")
    return PlantSpec(**json.loads(path.read_text(encoding="utf-8")))
