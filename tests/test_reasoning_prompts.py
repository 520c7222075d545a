"""Labelled reasoning sets are what they claim, and token_states reads the right tokens at every depth."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import latentbook as lb
from latentbook.capturing.states import sequence_states, token_states
from latentbook.prompts import reasoning


@pytest.mark.parametrize("name", sorted(reasoning.SETS))
def test_sets_are_seeded_balanced_and_spans_hold_their_words(name):
    data = reasoning.load(name, n_items=60, seed=1)
    assert data == reasoning.load(name, n_items=60, seed=1)
    assert data != reasoning.load(name, n_items=60, seed=2)
    assert len(data) == 60
    finals = [item.targets[-1].label for item in data.items]
    counts = np.bincount(finals, minlength=len(data.classes))
    assert counts.max() - counts.min() <= 1  # balanced query classes
    for item in data.items:
        steps = sorted({t.step for t in item.targets})
        assert steps == list(range(len(data.steps)))
        for target in item.targets:
            word = item.text[target.start : target.end]
            assert word and word == word.strip() and 0 <= target.label < len(data.classes)
        assert data.classes[item.targets[-1].label] == item.answer


def test_variable_binding_labels_follow_the_chain():
    data = reasoning.variable_binding(n_items=40, n_hops=3, n_values=5, n_chains=2, seed=0)
    for item in data.items:
        bound = {}
        for statement in item.text.split(" ; ")[:-1]:
            left, right = statement.split(" = ")
            bound[left] = bound.get(right, right)
        query = item.text.rsplit("? ", 1)[1]
        assert bound[query] == item.answer
        for target in item.targets:
            word = item.text[target.start : target.end]
            assert data.classes[target.label] == bound.get(word, word)


def test_entity_tracking_answer_is_the_room_of_the_queried_object():
    data = reasoning.entity_tracking(n_items=30, n_rooms=4, seed=0)
    for item in data.items:
        facts = dict(s.removeprefix("The ").split(" is in the ") for s in item.text.split(". ")[:-1])
        obj = item.text.split("Where is the ")[1].split("?")[0]
        assert facts[facts[obj]] == item.answer
        assert item.text.endswith(f"The {obj} is in the")


def _holds(premise: str, a: tuple[bool, ...]) -> bool:
    """Truth of a quantified premise in a world where the members of P have predicate values ``a``."""
    if premise.startswith("It is not true that "):
        return not _holds(premise.removeprefix("It is not true that ").capitalize(), a)
    if premise.startswith("Not all "):
        return not all(a)
    negated = " are not " in premise
    values = [not v for v in a] if negated else list(a)
    if premise.startswith(("All ", "Every one of ")):
        return all(values)
    if premise.startswith(("No ", "None of ")):
        return not any(values)
    if premise.startswith("Some "):
        return any(values)
    raise AssertionError(premise)


def test_negation_classes_follow_the_logic():
    """Answer = what every world satisfying the premise says about the member (brute force, 3 members)."""
    import itertools

    data = reasoning.negation_quantifiers(n_items=90, seed=0)
    assert len({item.text.split(". ")[0].split()[0] for item in data.items}) >= 5  # every template shows up
    for item in data.items:
        premise = item.text.split(". ")[0]
        member_values = {w[0] for w in itertools.product([False, True], repeat=3) if _holds(premise, w)}
        expected = "yes" if member_values == {True} else "no" if member_values == {False} else "unknown"
        assert item.answer == expected, premise


def test_token_states_equal_output_hidden_states_at_the_targets(tiny):
    data = reasoning.entity_tracking(n_items=6, seed=3)
    got = token_states(tiny, data, batch_size=4)
    n_targets = sum(len(item.targets) for item in data.items)
    assert got.states.shape == (n_targets, tiny.n_layers + 1, tiny.d_model)
    for i, item in enumerate(data.items):
        enc = tiny.tokenizer([item.text], return_tensors="pt")
        with torch.no_grad():
            hidden = tiny.model(**enc, output_hidden_states=True).hidden_states
        mine = np.flatnonzero(got.items == i)
        for row in mine:
            target = item.targets[list(mine).index(row)]
            assert target.label == got.labels[row] and target.step == got.steps[row]
            t = got.token_index[row]
            assert item.text[target.end - 1] in got.tokens[row]
            for depth in range(tiny.n_layers):  # depth L of transformers is after the final norm
                np.testing.assert_allclose(got.states[row, depth], hidden[depth][0, t].numpy(), atol=1e-5)
            with torch.no_grad():
                normed = tiny.anatomy.final_norm(torch.from_numpy(got.states[row, -1]))
            np.testing.assert_allclose(normed.numpy(), hidden[-1][0, t].numpy(), atol=1e-5)


def test_token_states_do_not_depend_on_batching(tiny):
    data = reasoning.variable_binding(n_items=5, seed=4)
    one = token_states(tiny, data, batch_size=1)
    many = token_states(tiny, data, batch_size=5)
    np.testing.assert_allclose(one.states, many.states, atol=1e-5)
    np.testing.assert_array_equal(one.labels, many.labels)


def test_targets_beyond_max_length_are_refused(tiny):
    data = reasoning.variable_binding(n_items=2, seed=0)
    with pytest.raises(lb.InvalidInputError, match="max_length"):
        token_states(tiny, data, max_length=8)


def test_sequence_states_match_hidden_states_and_mask_padding(tiny):
    prompts = ["A short one.", "A somewhat longer prompt with more tokens in it."]
    states, mask = sequence_states(tiny, prompts, batch_size=2)
    assert states.shape[:2] == (tiny.n_layers + 1, 2) and mask.shape == states.shape[1:3]
    for p, text in enumerate(prompts):
        enc = tiny.tokenizer([text], return_tensors="pt")
        with torch.no_grad():
            hidden = tiny.model(**enc, output_hidden_states=True).hidden_states
        t = enc["input_ids"].shape[1]
        assert mask[p].sum() == t
        np.testing.assert_allclose(states[1, p, :t], hidden[1][0].numpy(), atol=1e-5)
        assert np.all(states[:, p, t:] == 0)
