"""Multi-hop variable binding in plain-text tokens: the task of the controlled test.

A program is a list of assignments, then one query::

    a = 7 ; k = a ; m = 2 ; q = k ; ? q      -> answer 7 (3 hops: q -> k -> a -> 7)

- every evaluated program has ``n_statements`` assignments (so the length never gives the hop count
  away); the queried chain has 1 to ``max_hops`` assignments, the rest are distractor chains, each with
  its own value drawn from the ``k = n_values`` values (chains may share a value, so answering by
  elimination does not pay);
- chains are interleaved at random, each in program order (a variable is assigned before it is read).
  A uniform interleaving leaks the answer to a positional heuristic: a long chain has more statements that
  can come first, so answering the first value written scores 0.53 at 3 hops and 0.71 at 4 (against
  0.38 and 0.42 for a value picked at random among those written). ``TaskSpec(balanced_starts=True)``
  draws the rank of the queried chain's start among the chains' starts uniformly first, then an
  interleaving uniformly among those with that rank, so the first value written is the answer no more
  often than a random one (``first_value_floor``; off by default: the ladder measured so far was
  trained without it);
- values are ``n_values`` digit tokens ``0 .. k-1``; variable names come from a seeded pool split into
  *training* names and *held-out* names that never appear in training.

The bound value is the "object" whose permanence the chapter tests (book/paper.md, claim 5). Every example
records the token position of each statement of the queried chain, so the residual stream can be read
at the assignment (``a = 7``), at each later hop (``k = a``, ``q = k``) and at the query.
Introduced in: chapter 7.
"""

from __future__ import annotations

import itertools
import string
from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidInputError

SPECIALS = ("<pad>", "<bos>", "<unk>")
SYMBOLS = ("=", ";", "?")
TOKENS_PER_STATEMENT = 4  # name = rhs ;


@dataclass(frozen=True)
class TaskSpec:
    """Sizes of the task. The defaults are the ladder's task."""

    n_values: int = 8
    n_statements: int = 6
    max_hops: int = 4
    n_names: int = 96
    n_heldout: int = 24
    name_seed: int = 0
    balanced_starts: bool = False  # the queried chain's start rank uniform among the chains (see above)

    def __post_init__(self) -> None:
        if not 2 <= self.n_values <= 10:
            raise InvalidInputError(f"n_values must be in 2..10 (digit tokens), got {self.n_values}.")
        if not 1 <= self.max_hops <= self.n_statements:
            raise InvalidInputError(
                f"max_hops ({self.max_hops}) must be in 1..n_statements ({self.n_statements})."
            )
        if not 0 < self.n_heldout < self.n_names:
            raise InvalidInputError(f"n_heldout must be in 1..n_names-1, got {self.n_heldout}.")
        if self.n_names - self.n_heldout < self.n_statements or self.n_heldout < self.n_statements:
            raise InvalidInputError("Each name split needs at least n_statements names.")

    @property
    def seq_len(self) -> int:
        """Tokens per prompt: ``<bos>``, the statements, ``? name``."""
        return 1 + TOKENS_PER_STATEMENT * self.n_statements + 2

    def to_dict(self) -> dict:
        return dict(
            n_values=self.n_values,
            n_statements=self.n_statements,
            max_hops=self.max_hops,
            n_names=self.n_names,
            n_heldout=self.n_heldout,
            name_seed=self.name_seed,
            balanced_starts=self.balanced_starts,
        )


def name_pool(spec: TaskSpec) -> tuple[list[str], list[str]]:
    """(training names, held-out names): disjoint, from a seeded shuffle of ``a..z`` and two-letter names."""
    letters = list(string.ascii_lowercase)
    pairs = ["".join(p) for p in itertools.product("bdfgklmnprstvz", "aeiou")]
    pool = (letters + pairs)[: spec.n_names]
    if len(pool) < spec.n_names:
        raise InvalidInputError(f"n_names must be at most {len(letters) + len(pairs)}, got {spec.n_names}.")
    order = np.random.default_rng(spec.name_seed).permutation(len(pool))
    shuffled = [pool[i] for i in order]
    return shuffled[spec.n_heldout :], shuffled[: spec.n_heldout]


def task_vocabulary(spec: TaskSpec) -> list[str]:
    """Every token of the task, in id order: specials, symbols, values ``0..k-1``, then all names."""
    train, heldout = name_pool(spec)
    return [*SPECIALS, *SYMBOLS, *(str(v) for v in range(spec.n_values)), *sorted(train + heldout)]


@dataclass
class Example:
    """One program with its answer and where the queried chain sits in the token sequence.

    ``chain_positions[j]`` is the token index (``<bos>`` = 0) of the right-hand side of the chain's
    statement ``j``: ``j = 0`` is the assignment of the value (``a = 7``), ``j = hops-1`` the statement
    that assigns the queried name. ``query_position`` is the last token (the queried name).
    """

    text: str
    answer: int
    hops: int
    chain_positions: list[int]
    query_position: int
    chain_values: list[int] = field(default_factory=list)  # the value of every chain, queried one first

    def to_dict(self) -> dict:
        return dict(
            text=self.text,
            answer=self.answer,
            hops=self.hops,
            chain_positions=self.chain_positions,
            query_position=self.query_position,
            chain_values=self.chain_values,
        )


def _chain_lengths(rng: np.random.Generator, spec: TaskSpec, hops: int) -> list[int]:
    lengths = [hops]
    left = spec.n_statements - hops
    while left > 0:
        n = int(rng.integers(1, min(spec.max_hops, left) + 1))
        lengths.append(n)
        left -= n
    return lengths


def _start_rank(owners: np.ndarray) -> int:
    """How many chains start before chain 0 does, in the interleaving ``owners`` (chain of each statement)."""
    first = {}
    for i, c in enumerate(owners.tolist()):
        first.setdefault(c, i)
    return sum(i < first[0] for i in first.values())


def _interleave(rng: np.random.Generator, lengths: list[int], balanced: bool) -> np.ndarray:
    """The chain of each statement, in program order: a uniform random interleaving of the chains.

    ``balanced``: the rank of the queried chain's (chain 0's) start among the chains' starts is drawn
    uniformly from ``0 .. len(lengths) - 1`` first, then an interleaving is drawn uniformly among those with
    that rank (by rejection: every rank is possible, and with 6 statements the rarest has probability 1/15).
    Not balanced, the rank follows the chain lengths: a chain of ``L`` of the ``N`` statements comes first with
    probability ``L / N``.
    """
    owners = np.repeat(np.arange(len(lengths)), lengths)
    rank = int(rng.integers(0, len(lengths))) if balanced else None
    rng.shuffle(owners)
    while rank is not None and _start_rank(owners) != rank:
        rng.shuffle(owners)
    return owners


def _one(rng: np.random.Generator, spec: TaskSpec, names: list[str], hops: int) -> Example:
    lengths = _chain_lengths(rng, spec, hops)
    values = rng.integers(0, spec.n_values, size=len(lengths))  # chains may share a value
    chosen = list(rng.choice(len(names), size=spec.n_statements, replace=False))
    chains: list[list[tuple[str, str]]] = []
    for n, value in zip(lengths, values):
        vars_ = [names[chosen.pop()] for _ in range(n)]
        rhs = [str(int(value)), *vars_[:-1]]
        chains.append(list(zip(vars_, rhs)))
    owners = _interleave(rng, lengths, spec.balanced_starts)  # keeps each chain in order
    cursor = [0] * len(chains)
    words, chain_positions = [], []  # token index = word index + 1 (the tokenizer prepends <bos>)
    for c in owners:
        lhs, rhs = chains[c][cursor[c]]
        cursor[c] += 1
        words += [lhs, "=", rhs, ";"]
        if c == 0:
            chain_positions.append(len(words) - 1)
    query = chains[0][-1][0]
    words += ["?", query]
    return Example(
        text=" ".join(words),
        answer=int(values[0]),
        hops=hops,
        chain_positions=chain_positions,
        query_position=len(words),
        chain_values=[int(v) for v in values],
    )


def generate(
    spec: TaskSpec,
    n: int,
    *,
    hops: int | None = None,
    split: str = "train",
    seed: int = 0,
) -> list[Example]:
    """``n`` programs, seeded. ``hops=None`` draws the hop count uniformly from ``1..max_hops``.

    ``split="train"`` uses the training names only, ``split="heldout"`` the held-out names only.
    """
    if split not in ("train", "heldout"):
        raise InvalidInputError(f"split must be 'train' or 'heldout', got {split!r}.")
    if hops is not None and not 1 <= hops <= spec.max_hops:
        raise InvalidInputError(f"hops must be in 1..{spec.max_hops}, got {hops}.")
    if n < 1:
        raise InvalidInputError(f"n must be at least 1, got {n}.")
    train, heldout = name_pool(spec)
    names = train if split == "train" else heldout
    rng = np.random.default_rng(seed)
    return [
        _one(rng, spec, names, hops if hops is not None else int(rng.integers(1, spec.max_hops + 1)))
        for _ in range(n)
    ]


def statement_values(text: str) -> list[tuple[int, int]]:
    """(token position of each statement's ``;``, the value its variable holds after it) of a program's text."""
    words = text.split()
    env: dict[str, str] = {}
    out = []
    for i in range(0, words.index("?"), TOKENS_PER_STATEMENT):
        lhs, _, rhs, _ = words[i : i + TOKENS_PER_STATEMENT]
        env[lhs] = env.get(rhs, rhs)
        out.append((i + TOKENS_PER_STATEMENT, int(env[lhs])))  # word i+3 is the ';', token i+4 after <bos>
    return out


def with_queries(
    spec: TaskSpec, example: Example, n_queries: int, rng: np.random.Generator
) -> tuple[str, list[int], list[int]]:
    """A training text: the program, its query and answer, then ``n_queries - 1`` more ``? name value``.

    Returns (text, token positions of the queried names, answers). The first query is ``example``'s own
    (its hop count is controlled); the others ask distinct random variables of the program, so one
    program gives several supervised tokens. The evaluation prompt (program + first query) is a prefix
    of the training text, so a causal model sees exactly the same context at the first query.
    """
    words = example.text.split()
    program = words[: words.index("?")]
    env = {words[p - TOKENS_PER_STATEMENT]: str(v) for p, v in statement_values(example.text)}
    query = words[-1]
    others = [v for v in env if v != query]
    extra = min(n_queries - 1, len(others))
    picked = [query, *(others[i] for i in rng.choice(len(others), size=extra, replace=False))]
    out, positions = list(program), []
    for name in picked:
        out += ["?", name]
        positions.append(len(out))  # +1 for <bos>, -1 for the name itself
        out.append(env[name])
    return " ".join(out[:-1]), positions, [int(env[name]) for name in picked]


def resolve(text: str) -> int:
    """The value of the last name of ``text``, by running its program: an interpreter independent of the generator."""
    words = text.split()
    if "?" not in words:
        raise InvalidInputError("A program ends with '? name'.")
    body, query = words[: words.index("?")], words[-1]
    env: dict[str, str] = {}
    statement: list[str] = []
    for w in body:
        statement.append(w)
        if w == ";":
            lhs, _, rhs, _ = statement
            env[lhs] = env[rhs] if rhs in env else rhs
            statement = []
    return int(env[query])


def task_tokenizer(spec: TaskSpec):
    """A word-level tokenizer (``tokenizers`` library) wrapped in ``PreTrainedTokenizerFast``.

    Splits on whitespace, maps each word to its id in ``task_vocabulary(spec)`` and prepends ``<bos>`` when the
    text does not start with it, so ``lb.capture`` works on plain program text.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(task_vocabulary(spec))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A <bos> $B", special_tokens=[("<bos>", vocab["<bos>"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<bos>",
        pad_token="<pad>",
        unk_token="<unk>",
        padding_side="right",
    )


def encode(spec: TaskSpec, examples: list[Example]) -> tuple[np.ndarray, np.ndarray]:
    """(token ids of shape ``(n, seq_len)``, answer token ids of shape ``(n,)``) without a tokenizer call."""
    vocab = {w: i for i, w in enumerate(task_vocabulary(spec))}
    ids = np.array([[vocab["<bos>"], *(vocab[w] for w in e.text.split())] for e in examples], dtype=np.int64)
    answers = np.array([vocab[str(e.answer)] for e in examples], dtype=np.int64)
    return ids, answers


def value_token_ids(spec: TaskSpec) -> np.ndarray:
    """Token ids of the values ``0..k-1``, in value order."""
    vocab = {w: i for i, w in enumerate(task_vocabulary(spec))}
    return np.array([vocab[str(v)] for v in range(spec.n_values)])


def name_token_ids(spec: TaskSpec) -> np.ndarray:
    """Token ids of every variable name (training and held-out)."""
    vocab = {w: i for i, w in enumerate(task_vocabulary(spec))}
    train, heldout = name_pool(spec)
    return np.array(sorted(vocab[w] for w in train + heldout))
