"""Where the ladder's loss supervises and where the TCO probes read (issue #49, item 6): the probe is fitted at the
query, a supervised position, and tested at each hop's right-hand side, which the loss never supervises; the token
right after it (the statement's ``;``) is supervised with the same value, so permanence at the hops may still be
trained in. A ladder trained without the statements' supervision would settle it (not run here: about 2.5 hours per
rung and seed on one core)."""

import numpy as np

from latentbook.ladder.task import generate, statement_values, with_queries
from latentbook.ladder.train import LADDER_V2_SPEC


def test_hop_probes_sit_where_the_loss_does_not_supervise_one_token_before_a_supervised_semicolon():
    rng = np.random.default_rng(0)
    for example in generate(LADDER_V2_SPEC, 200, split="heldout", seed=5):
        semicolons = {p for p, _ in statement_values(example.text)}  # token index of each statement's ';'
        _, queries, _ = with_queries(LADDER_V2_SPEC, example, 6, rng)
        supervised = semicolons | set(queries)
        hops = example.chain_positions  # token index of the chain's right-hand sides (the probed tokens)
        assert not supervised & set(hops)
        assert all(p + 1 in semicolons for p in hops)
        assert example.query_position == queries[0]  # the probe's own position is supervised
        values = dict(statement_values(example.text))
        assert all(values[p + 1] == example.answer for p in hops)  # ... with the value the probe decodes
