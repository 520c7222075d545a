"""Labelled reasoning prompt sets: each item is a text plus its tokens of interest, with a class and a step.

Three seeded generators, each a small discrete operation the paper says needs object permanence
(book/paper.md, "The question" and claim 5, Transient Class Objects):

- ``variable_binding`` (``"binding"``): ``a = 7 ; b = 3 ; k = a ; m = b ; q = k ; z = m ; ? q``. The class
  is the value a chain carries (``"7"``); the steps are the value itself (0), the right-hand variable of
  each hop (1..n_hops) and the queried variable (n_hops + 1).
- ``entity_tracking`` (``"entities"``): ``The box is in the attic. The bag is in the cellar. The key is in
  the box. ... Where is the key? The key is in the``. The class is the room an object ends up in; steps: the
  room (0), the container holding the object (1), the object in the question (2), the answer slot (3).
- ``negation_quantifiers`` (``"negation"``): ``Not all blickets are green. Tom is a blicket. Is Tom green?
  Answer:``. The class is what follows (``yes`` / ``no`` / ``unknown``), set by a quantifier composed with
  negation; steps: the predicate of the quantified premise (0), the noun of the membership premise (1),
  the predicate in the question (2), the answer slot (3).

Facts are stated before they are used, so in a causal model every token of interest has already seen what
fixes its class. A ``Target`` is a character span ``[start, end)`` of ``Item.text``;
``capturing.states.token_states`` maps it to the token holding its last character.
Introduced in: chapter 6.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InvalidInputError

VALUES = ("2", "3", "4", "5", "6", "7", "8", "9")
VARIABLES = tuple("abcdefghjkmnpqrstuvwxyz")
ROOMS = ("attic", "cellar", "garage", "kitchen", "garden", "library")
CONTAINERS = ("box", "bag", "drawer", "basket", "jar", "crate", "chest", "bucket")
OBJECTS = ("key", "coin", "ring", "map", "pen", "stamp", "shell", "button")
NAMES = ("Tom", "Ana", "Ravi", "Mia", "Leo", "Sara", "Ivan", "Nora")
NONCE = (("blicket", "blickets"), ("dax", "daxes"), ("wug", "wugs"), ("fep", "feps"), ("tove", "toves"))
ADJECTIVES = ("green", "heavy", "loud", "round", "soft", "bright")
ANSWERS = ("yes", "no", "unknown")
# quantified premise -> what it says about one member: entailed (yes), contradicted (no), open (unknown)
QUANTIFIERS: tuple[tuple[str, int], ...] = (
    ("All {P} are {A}.", 0),
    ("Every one of the {P} is {A}.", 0),
    ("It is not true that some {P} are not {A}.", 0),
    ("No {P} are {A}.", 1),
    ("None of the {P} are {A}.", 1),
    ("It is not true that some {P} are {A}.", 1),
    ("Some {P} are {A}.", 2),
    ("Not all {P} are {A}.", 2),
    ("It is not true that no {P} are {A}.", 2),
)


@dataclass(frozen=True)
class Target:
    """A token of interest: the character span ``text[start:end]``, its class label and reasoning step."""

    start: int
    end: int
    label: int
    step: int


@dataclass(frozen=True)
class Item:
    """One prompt with its tokens of interest and the correct continuation."""

    text: str
    targets: tuple[Target, ...]
    answer: str


@dataclass(frozen=True)
class ReasoningSet:
    """A labelled prompt set: ``items``, the name of each class label and of each step."""

    name: str
    items: tuple[Item, ...]
    classes: tuple[str, ...]
    steps: tuple[str, ...]

    def texts(self) -> list[str]:
        return [item.text for item in self.items]

    def __len__(self) -> int:
        return len(self.items)


class _Text:
    """Builds a text piece by piece and records the character spans of marked pieces."""

    def __init__(self):
        self.parts: list[str] = []
        self.length = 0
        self.targets: list[Target] = []

    def add(self, piece: str, label: int | None = None, step: int | None = None) -> None:
        if label is not None:
            self.targets.append(Target(self.length, self.length + len(piece), label, step))
        self.parts.append(piece)
        self.length += len(piece)

    def item(self, answer: str) -> Item:
        return Item("".join(self.parts), tuple(self.targets), answer)


def _check_count(name: str, value: int, low: int, high: int) -> int:
    if not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"{name} must be an integer in [{low}, {high}], got {value!r}.")
    return value


def _balanced(n: int, k: int, rng: random.Random) -> list[int]:
    labels = [i % k for i in range(n)]
    rng.shuffle(labels)
    return labels


def variable_binding(
    n_items: int = 200, n_hops: int = 3, n_values: int = 4, n_chains: int = 2, seed: int = 0
) -> ReasoningSet:
    """Interleaved chains of variable copies; the class of each token of interest is the value it carries.

    ``a = 7 ; b = 3 ; k = a ; m = b ; ... ; ? q`` with ``n_chains`` chains of ``n_hops`` copies each (distinct
    values, distinct single-letter variables), hops of different chains interleaved in a random order. Query
    labels are balanced over the ``n_values`` classes. Introduced in: chapter 6.
    """
    n_items = _check_count("n_items", n_items, 1, 10**6)
    n_hops = _check_count("n_hops", n_hops, 1, 6)
    n_values = _check_count("n_values", n_values, 2, len(VALUES))
    n_chains = _check_count("n_chains", n_chains, 1, n_values)
    if n_chains * (n_hops + 1) > len(VARIABLES):
        raise InvalidInputError(
            f"{n_chains} chains of {n_hops} hops need more than {len(VARIABLES)} variable names."
        )
    rng = random.Random(seed)
    items = []
    for query_label in _balanced(n_items, n_values, rng):
        others = rng.sample([v for v in range(n_values) if v != query_label], n_chains - 1)
        values = [query_label, *others]
        names = rng.sample(VARIABLES, n_chains * (n_hops + 1))
        chains = [names[c * (n_hops + 1) : (c + 1) * (n_hops + 1)] for c in range(n_chains)]
        text = _Text()
        for hop in range(n_hops + 1):
            for c in rng.sample(range(n_chains), n_chains):
                text.add(f"{chains[c][hop]} = ")
                if hop == 0:
                    text.add(VALUES[values[c]], values[c], 0)
                else:
                    text.add(chains[c][hop - 1], values[c], hop)
                text.add(" ; ")
        text.add("? ")
        text.add(chains[0][-1], query_label, n_hops + 1)
        items.append(text.item(VALUES[query_label]))
    steps = ("value", *(f"hop {h}" for h in range(1, n_hops + 1)), "query")
    return ReasoningSet("binding", tuple(items), VALUES[:n_values], steps)


def entity_tracking(n_items: int = 200, n_rooms: int = 4, n_chains: int = 2, seed: int = 0) -> ReasoningSet:
    """Objects in containers in rooms; the class of each token of interest is the room its object ends up in.

    ``The box is in the attic. The bag is in the cellar. The key is in the box. The coin is in the bag.
    Where is the key? The key is in the`` (answer ``attic``). Introduced in: chapter 6.
    """
    n_items = _check_count("n_items", n_items, 1, 10**6)
    n_rooms = _check_count("n_rooms", n_rooms, 2, len(ROOMS))
    n_chains = _check_count("n_chains", n_chains, 1, n_rooms)
    rng = random.Random(seed)
    items = []
    for query_room in _balanced(n_items, n_rooms, rng):
        rooms = [query_room, *rng.sample([r for r in range(n_rooms) if r != query_room], n_chains - 1)]
        containers = rng.sample(CONTAINERS, n_chains)
        objects = rng.sample(OBJECTS, n_chains)
        text = _Text()
        for c in rng.sample(range(n_chains), n_chains):
            text.add(f"The {containers[c]} is in the ")
            text.add(ROOMS[rooms[c]], rooms[c], 0)
            text.add(". ")
        for c in rng.sample(range(n_chains), n_chains):
            text.add(f"The {objects[c]} is in the ")
            text.add(containers[c], rooms[c], 1)
            text.add(". ")
        text.add("Where is the ")
        text.add(objects[0], query_room, 2)
        text.add(f"? The {objects[0]} is in ")
        text.add("the", query_room, 3)
        items.append(text.item(ROOMS[query_room]))
    return ReasoningSet(
        "entities", tuple(items), ROOMS[:n_rooms], ("room", "container", "object", "answer slot")
    )


def negation_quantifiers(n_items: int = 180, seed: int = 0) -> ReasoningSet:
    """A quantified premise (with or without negation), a membership premise, and a yes/no/unknown question.

    ``Not all daxes are loud. Mia is a dax. Is Mia loud? Answer:`` (answer ``unknown``). Nonce nouns keep
    world knowledge out; the three classes are balanced, each by three templates. Introduced in: chapter 6.
    """
    n_items = _check_count("n_items", n_items, 1, 10**6)
    rng = random.Random(seed)
    by_class = {label: [t for t, lab in QUANTIFIERS if lab == label] for label in range(len(ANSWERS))}
    items = []
    for label in _balanced(n_items, len(ANSWERS), rng):
        template = rng.choice(by_class[label])
        singular, plural = rng.choice(NONCE)
        adjective, name = rng.choice(ADJECTIVES), rng.choice(NAMES)
        head, tail = template.split("{A}")
        text = _Text()
        text.add(head.format(P=plural))
        text.add(adjective, label, 0)
        text.add(f"{tail} {name} is a ")
        text.add(singular, label, 1)
        text.add(f". Is {name} ")
        text.add(adjective, label, 2)
        text.add("? Answer")
        text.add(":", label, 3)
        items.append(text.item(ANSWERS[label]))
    return ReasoningSet(
        "negation", tuple(items), ANSWERS, ("premise predicate", "member noun", "question", "answer slot")
    )


SETS: dict[str, Callable[..., ReasoningSet]] = {
    "binding": variable_binding,
    "entities": entity_tracking,
    "negation": negation_quantifiers,
}


def load(name: str, **kwargs) -> ReasoningSet:
    """The labelled set ``name`` (``binding``, ``entities`` or ``negation``); ``kwargs`` go to its generator."""
    if name not in SETS:
        raise InvalidInputError(f"Unknown reasoning set {name!r}: choose one of {sorted(SETS)}.")
    return SETS[name](**kwargs)
