"""Chapter 7's ladder: the task generator, the training pipeline on a tiny model, loading, measurement."""

import dataclasses
import json

import numpy as np
import pytest
import torch

import latentbook as lb
from latentbook.analysis import resampling, synthetic
from latentbook.errors import IntegrityError, InvalidInputError, UnknownModelError
from latentbook.ladder import diagnostics, folders, rank_correlation, report, store, task, train
from latentbook.study import ladder_rows

SPEC = task.TaskSpec()
TINY = train.Rung("l1-d32", 1, 32)
TINY_CONFIG = train.TrainConfig(steps=40, batch_size=16, warmup=5, eval_every=40, n_eval=16, lr=1e-2)


def test_answers_match_an_independent_interpreter_and_hops_are_exact():
    for hops in range(1, SPEC.max_hops + 1):
        for e in task.generate(SPEC, 200, hops=hops, seed=hops):
            assert task.resolve(e.text) == e.answer
            assert e.hops == hops == len(e.chain_positions)
            words = ["<bos>", *e.text.split()]
            # the chain: statement 0 assigns the value, statement j copies statement j-1's name
            assert words[e.chain_positions[0]] == str(e.answer)
            for j in range(1, hops):
                assert words[e.chain_positions[j]] == words[e.chain_positions[j - 1] - 2]
            assert words[e.query_position] == words[e.chain_positions[-1] - 2]
            assert len(words) == SPEC.seq_len


def test_every_variable_is_assigned_once_and_values_cover_the_k_classes():
    examples = task.generate(SPEC, 300, seed=3)
    for e in examples:
        words = e.text.split()
        lhs = words[0 : 4 * SPEC.n_statements : 4]
        assert len(set(lhs)) == len(lhs) == SPEC.n_statements
        assert all(0 <= v < SPEC.n_values for v in e.chain_values)
    assert {e.answer for e in examples} == set(range(SPEC.n_values))
    short = task.generate(task.TaskSpec(n_statements=3, max_hops=2), 20, seed=4)
    assert all(len(e.text.split()) == 4 * 3 + 2 and e.hops <= 2 for e in short)


def test_heldout_names_are_disjoint_from_training_names():
    train_names, heldout = task.name_pool(SPEC)
    assert not set(train_names) & set(heldout)
    assert len(heldout) == SPEC.n_heldout
    seen_train = {w for e in task.generate(SPEC, 300, seed=1) for w in e.text.split()}
    seen_heldout = {w for e in task.generate(SPEC, 300, split="heldout", seed=1) for w in e.text.split()}
    assert not seen_train & set(heldout)
    assert not seen_heldout & set(train_names)


def test_generator_is_seeded_and_checks_its_arguments():
    a = [e.text for e in task.generate(SPEC, 20, seed=5)]
    assert a == [e.text for e in task.generate(SPEC, 20, seed=5)]
    assert a != [e.text for e in task.generate(SPEC, 20, seed=6)]
    with pytest.raises(InvalidInputError):
        task.generate(SPEC, 5, hops=SPEC.max_hops + 1)
    with pytest.raises(InvalidInputError):
        task.generate(SPEC, 5, split="test")


def test_generator_output_without_balanced_starts_is_the_one_the_ladder_was_trained_on():
    """The option is off by default, and off it leaves the random stream untouched: the programs of a seed are
    those of the generator before the option existed (sha256 of their dicts, taken from that generator)."""
    import hashlib

    def digest(examples):
        return hashlib.sha256(json.dumps([e.to_dict() for e in examples]).encode()).hexdigest()[:16]

    assert SPEC.balanced_starts is False and task.TaskSpec(**SPEC.to_dict()) == SPEC
    assert digest(task.generate(SPEC, 300)) == "bac6c97793cf5f47"
    assert digest(task.generate(SPEC, 300, hops=3)) == "58ae408f95b0ec2a"
    assert digest(task.generate(SPEC, 300, split="heldout", seed=7)) == "6e0f03ffeb64ba32"


def _first_value_and_guess(spec, hops, n=2000, seed=5):
    """(accuracy of answering the first value written, of a random value among the distinct ones written)."""
    examples = task.generate(spec, n, hops=hops, split="heldout", seed=seed)
    first = np.mean([int(next(w for w in e.text.split() if w.isdigit())) == e.answer for e in examples])
    return float(first), float(np.mean([1 / len(set(e.chain_values)) for e in examples]))


def test_balanced_starts_remove_the_first_value_heuristic():
    """Uniform interleaving: a long queried chain starts first more often, so the first value written is the
    answer far above guessing at 3 and 4 hops (the leak of the trained ladder). ``balanced_starts``: the queried
    chain's start rank is uniform among the chains and the first value is the answer within 0.05 of guessing;
    the programs stay valid (answers from the interpreter, hop counts exact, chains in order)."""
    balanced = task.TaskSpec(balanced_starts=True)
    for hops, leak in ((3, 0.08), (4, 0.2)):
        first, guess = _first_value_and_guess(SPEC, hops)
        assert first > guess + leak, (hops, first, guess)
        first, guess = _first_value_and_guess(balanced, hops)
        assert abs(first - guess) < 0.05, (hops, first, guess)
    ranks = []
    for e in task.generate(balanced, 600, hops=2, seed=9):
        assert task.resolve(e.text) == e.answer and len(e.chain_positions) == 2
        words = e.text.split()
        assert words[e.chain_positions[0] - 1] == str(e.answer)
        starts = [i for i, w in enumerate(words) if w.isdigit()]  # each chain starts with its value
        ranks.append((starts.index(e.chain_positions[0] - 1), len(starts)))
    starts = np.array([r for r, n in ranks if n == 3])  # programs of three chains: each rank about a third
    assert len(starts) > 100 and np.all(np.abs(np.bincount(starts, minlength=3) / len(starts) - 1 / 3) < 0.1)
    assert diagnostics.first_value_floor(balanced, 4) < diagnostics.first_value_floor(SPEC, 4) - 0.15


def test_tokenizer_matches_the_direct_encoding():
    tok = task.task_tokenizer(SPEC)
    examples = task.generate(SPEC, 10, seed=2)
    ids, answers = task.encode(SPEC, examples)
    assert tok([e.text for e in examples])["input_ids"] == ids.tolist()
    assert [tok.convert_ids_to_tokens(int(a)) for a in answers] == [str(e.answer) for e in examples]


def test_training_queries_are_prefixed_by_the_evaluation_prompt():
    rng = np.random.default_rng(0)
    for e in task.generate(SPEC, 50, seed=9):
        text, positions, answers = task.with_queries(SPEC, e, 3, rng)
        words = ["<bos>", *text.split()]
        assert text.startswith(e.text) and positions[0] == e.query_position and answers[0] == e.answer
        for p, a in zip(positions, answers):
            assert words[p - 1] == "?" and task.resolve(" ".join(words[1 : p + 1])) == a


@pytest.fixture(scope="module")
def trained_tiny(tmp_path_factory):
    model, log = train.train(TINY, SPEC, TINY_CONFIG, progress=False, threads=None)
    root = tmp_path_factory.mktemp("ladder")
    folders.save_rung(model, log, SPEC, root / TINY.name)
    return model, log, root


def test_training_lowers_the_loss_and_is_reproducible(trained_tiny):
    model, log, _ = trained_tiny
    assert len(log.loss) == TINY_CONFIG.steps
    assert np.mean(log.loss[-10:]) < np.mean(log.loss[:5]) - 1.0
    again, _ = train.train(
        TINY, SPEC, train.TrainConfig(**{**TINY_CONFIG.__dict__, "steps": 3}), progress=False
    )
    first, _ = train.train(
        TINY, SPEC, train.TrainConfig(**{**TINY_CONFIG.__dict__, "steps": 3}), progress=False
    )
    for p, q in zip(again.parameters(), first.parameters()):
        assert torch.equal(p, q)


def test_learning_rate_warms_up_then_stays_or_decays_to_zero():
    constant = train.TrainConfig(steps=100, lr=1e-3, warmup=10)
    assert train.learning_rate(constant, 0) == pytest.approx(1e-4)
    assert train.learning_rate(constant, 9) == train.learning_rate(constant, 99) == pytest.approx(1e-3)
    cosine = train.TrainConfig(steps=100, lr=1e-3, warmup=10, schedule="cosine")
    assert train.learning_rate(cosine, 0) == pytest.approx(1e-4)
    assert train.learning_rate(cosine, 9) == pytest.approx(1e-3 * 0.5 * (1 + np.cos(np.pi * 9 / 100)))
    assert train.learning_rate(cosine, 50) == pytest.approx(0.5e-3)
    assert train.learning_rate(cosine, 99) < 1e-6
    with pytest.raises(InvalidInputError):
        train.train(TINY, SPEC, train.TrainConfig(steps=2, schedule="linear"), progress=False)


def test_statement_values_run_the_program_up_to_each_statement():
    for e in task.generate(SPEC, 50, seed=4):
        words = ["<bos>", *e.text.split()]
        statements = task.statement_values(e.text)
        assert len(statements) == SPEC.n_statements
        for position, value in statements:
            assert words[position] == ";"
            lhs = words[position - 3]
            assert task.resolve(" ".join([*words[1 : position + 1], "?", lhs])) == value


def test_training_batches_follow_the_hop_curriculum():
    vocab = task.task_vocabulary(SPEC)
    config = train.TrainConfig(batch_size=24)
    for hops in range(1, SPEC.max_hops + 1):
        ids, positions, answers = train.training_batch(SPEC, config, step=3, hops=hops)
        assert ids.shape[1] == SPEC.seq_len + 3 * (config.n_queries - 1)  # full programs, "7 ? k" per query
        assert positions.shape[1] == config.n_queries + SPEC.n_statements
        for row, pos, ans in zip(ids.tolist(), positions.tolist(), answers.tolist()):
            words = [vocab[i] for i in row]
            program = " ".join(words[1 : words.index("?")])
            chains = {}  # longest chain ending at each variable
            for i in range(0, len(program.split()), 4):
                lhs, _, rhs, _ = program.split()[i : i + 4]
                chains[lhs] = chains.get(rhs, 0) + 1
            assert max(chains.values()) <= hops
            for p, a in zip(pos, ans):  # every supervised position: a query or a ';', with its true value
                text = (
                    " ".join(words[1 : p + 1])
                    if words[p] != ";"
                    else " ".join([*words[1 : p + 1], "?", words[p - 3]])
                )
                assert task.resolve(text) == int(vocab[a])
    with pytest.raises(InvalidInputError):
        train.training_batch(SPEC, config, step=0, hops=SPEC.max_hops + 1)


def test_initialisation_zero_mlp_outputs_and_independent_name_codes():
    model = train.init_model(train.ladder_rung("l2-d64"), SPEC, seed=3)
    assert all(torch.count_nonzero(layer.mlp.down_proj.weight) == 0 for layer in model.model.layers)
    codes = model.model.embed_tokens.weight[torch.tensor(task.name_token_ids(SPEC))].detach()
    unit = codes / codes.norm(dim=1, keepdim=True)
    cosines = (unit @ unit.T)[~torch.eye(len(codes), dtype=torch.bool)]
    # independent N(0, I/d) codes: norms near 1, cosines N(0, 1/d); a shared direction would shift their mean
    assert abs(float(codes.norm(dim=1).mean()) - 1.0) < 0.05
    assert abs(float(cosines.mean())) < 0.02 and float(cosines.std()) < 1.5 / 64**0.5


def test_fresh_name_codes_are_per_program_and_leave_other_tokens_alone():
    model = train.init_model(TINY, SPEC, 0)
    ids, _, _ = train.training_batch(SPEC, train.TrainConfig(batch_size=8), step=0, hops=2)
    names = torch.tensor(task.name_token_ids(SPEC))
    emb = train.fresh_name_embeddings(model, ids, names, torch.Generator().manual_seed(0))
    stock = model.model.embed_tokens(ids)
    is_name = torch.isin(ids, names)
    assert torch.equal(emb[~is_name], stock[~is_name])
    assert not torch.isclose(emb[is_name], stock[is_name]).all(-1).any()
    for b in range(2):  # one code per name within a program, a different one in the next program
        for name in ids[b][is_name[b]].unique():
            rows = emb[b][ids[b] == name]
            assert torch.equal(rows, rows[:1].expand_as(rows))
    shared = set(ids[0][is_name[0]].tolist()) & set(ids[1][is_name[1]].tolist())
    for name in shared:
        assert not torch.equal(emb[0][ids[0] == name][0], emb[1][ids[1] == name][0])
    again = train.fresh_name_embeddings(model, ids, names, torch.Generator().manual_seed(0))
    assert torch.equal(emb, again)


def test_curriculum_grows_one_hop_at_a_time_when_the_gate_opens():
    config = train.TrainConfig(**{**TINY_CONFIG.__dict__, "steps": 5, "gate": -1.0})
    _, log = train.train(TINY, SPEC, config, progress=False, threads=None)
    assert [s["hops"] for s in log.stages] == list(range(1, SPEC.max_hops + 1))
    assert [s["step"] for s in log.stages] == list(range(SPEC.max_hops))
    _, closed = train.train(TINY, SPEC, dataclasses.replace(config, gate=1.0), progress=False, threads=None)
    assert closed.stages == [{"step": 0, "hops": 1}]


def test_fresh_names_from_chooses_the_stage_of_fresh_codes():
    short = train.TrainConfig(**{**TINY_CONFIG.__dict__, "steps": 3})
    fixed, _ = train.train(TINY, SPEC, short, progress=False, threads=None)  # stage 1 < 2: the init's codes
    never, _ = train.train(
        TINY,
        SPEC,
        dataclasses.replace(short, fresh_names_from=SPEC.max_hops + 1),
        progress=False,
        threads=None,
    )
    fresh, _ = train.train(
        TINY, SPEC, dataclasses.replace(short, fresh_names_from=1), progress=False, threads=None
    )
    assert all(torch.equal(p, q) for p, q in zip(fixed.parameters(), never.parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(fixed.parameters(), fresh.parameters()))
    for bad in (0, SPEC.max_hops + 2):
        with pytest.raises(InvalidInputError):
            train.train(TINY, SPEC, dataclasses.replace(short, fresh_names_from=bad), progress=False)


def test_name_embeddings_stay_at_their_initialisation(trained_tiny):
    model, _, _ = trained_tiny
    init = train.init_model(TINY, SPEC, TINY_CONFIG.seed)
    names = torch.tensor(task.name_token_ids(SPEC))
    values = torch.tensor(task.value_token_ids(SPEC))
    w, w0 = model.model.embed_tokens.weight, init.model.embed_tokens.weight
    assert torch.equal(w[names], w0[names])
    assert not torch.equal(w[values], w0[values])


def test_ladder_names_load_with_verified_sha256(trained_tiny, monkeypatch):
    model, log, root = trained_tiny
    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", str(root))
    loaded = lb.load_model(f"ladder:{TINY.name}")
    assert (loaded.n_layers, loaded.d_model) == (1, 32) and len(loaded.sha) == 64
    for p, q in zip(loaded.model.parameters(), model.parameters()):
        torch.testing.assert_close(p, q.to(torch.float16).float())
    null = lb.load_model(f"ladder:{TINY.name}:init")
    init = train.init_model(TINY, SPEC, TINY_CONFIG.seed)
    for p, q in zip(null.model.parameters(), init.parameters()):
        assert torch.equal(p, q)
    assert f"ladder:{TINY.name}" in set(lb.models().name)
    assert store.training_log(TINY.name)["config"]["steps"] == TINY_CONFIG.steps
    with pytest.raises(UnknownModelError):
        lb.load_model("ladder:l99-d1")
    weights = root / TINY.name / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(IntegrityError):
        lb.load_model(f"ladder:{TINY.name}")
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))


def test_measurement_of_a_tiny_model(trained_tiny, monkeypatch):
    _, _, root = trained_tiny
    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", str(root))
    loaded = lb.load_model(f"ladder:{TINY.name}")
    out = diagnostics.measure_model(loaded, SPEC, n_probe=256, n_capture=32, n_accuracy=32)
    json.dumps(out)  # plain JSON
    capability = out["capability"]
    accuracy = train.accuracy_by_hops(loaded.model, SPEC, n=32, split="heldout", seed=11)  # the same programs
    assert capability["accuracy"] == {str(h): a for h, a in accuracy.items()} and list(accuracy) == [
        1,
        2,
        3,
        4,
    ]
    assert capability["mean"] == pytest.approx(np.mean(list(accuracy.values())))
    hits = round(32 * accuracy[2])
    assert capability["ci"]["2"] == pytest.approx(resampling.wilson_interval(hits / 32, 32, resampling.Z95))
    assert capability["uniform_floor"] == 1 / SPEC.n_values
    assert capability["guess_floor"]["1"] == pytest.approx(diagnostics.guess_floor(SPEC, 1, 32, 11))
    assert len(out["omega"]["m"]) == 2 and out["omega"]["transition"]["gamma_c"] is None
    assert out["spikes"]["bound"] == SPEC.n_values - 1 and len(out["spikes"]["n_spikes"]) == 2
    stab = np.array(out["stability"]["accuracy"])
    assert stab.shape == (SPEC.max_hops + 1, 2) and out["stability"]["steps"][-1] == "query"
    # at depth 0 the assignment token is the value itself: its centroids classify it perfectly
    assert stab[0, 0] == 1.0
    assert 0 < out["contraction"]["q"]
    assert 0 <= out["contraction"]["ci"][0] <= out["contraction"]["q"] <= out["contraction"]["ci"][1]


def test_the_measurement_hash_reads_every_module_a_measurement_runs(deep_ladder_root, monkeypatch):
    """A ladder model of ten layers (enough depths for the jump fit) is loaded and measured under a tracer:
    every module of the package whose code runs is one ``diagnostics.diagnostics_hash`` reads, so no change to
    the code behind a stored number leaves it looking current. The hash changes with that code."""
    from .conftest import modules_run

    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", str(deep_ladder_root))
    out = {}

    def measure():
        loaded = lb.load_model("ladder:l10-d16")
        out.update(diagnostics.measure_model(loaded, SPEC, n_probe=256, n_capture=32, n_accuracy=32))

    ran = modules_run(measure)
    assert out["omega"]["transition"]["gamma_c"] is not None  # the jump fit ran
    assert ran - set(diagnostics.MEASURING_MODULES) == set()
    assert "latentbook.ladder.rank_correlation" not in diagnostics.MEASURING_MODULES  # correlations: not here

    before = diagnostics.diagnostics_hash()
    monkeypatch.setattr(diagnostics, "MEASURING_MODULES", diagnostics.MEASURING_MODULES[:-1])
    assert diagnostics.diagnostics_hash() != before


def _query_states(seed: int, n: int = 40, d: int = 8, k: int = 4, names: int = 5):
    """Query states at two depths: embeddings of ``names`` distinct names, then value centroids plus noise."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    name = rng.integers(0, names, n)
    embedding, centroids = rng.standard_normal((names, d)), rng.standard_normal((k, d)) * 1.5
    return np.stack([embedding[name], centroids[labels] + 0.7 * rng.standard_normal((n, d))], axis=1), labels


@pytest.mark.parametrize("seed", [23, *range(6)])
def test_contraction_interval_contains_its_estimate(seed):
    """Seed 23: the draws run above q (0.542), and their plain percentile interval, [0.589, 2.76], missed it."""
    states, labels = _query_states(seed)
    out = diagnostics.contraction_diagnostics(states, labels, seed=seed)
    assert 0 <= out["ci"][0] <= out["q"] <= out["ci"][1]


def test_spearman_interval_and_verdicts():
    x = np.arange(6.0)
    r = rank_correlation.spearman_ci(x, 2 * x + 1)
    assert r.rho == pytest.approx(1.0) and r.p_value == pytest.approx(2 / 720)
    assert rank_correlation.verdict(r, +1)[0] == "predicts capability"
    assert rank_correlation.verdict(r, -1)[0] == "does not"
    flat = rank_correlation.spearman_ci(x, np.ones(6))
    assert rank_correlation.verdict(flat, +1)[0] == "does not"
    noisy = rank_correlation.spearman_ci(x, np.array([3.0, 1, 4, 1.5, 5, 2]))
    assert rank_correlation.verdict(noisy, +1)[0] == "inconclusive"


def _fake_measurements(capabilities, stability):
    def entry(cap, stab, layers):
        return {
            "n_layers": layers,
            "d_model": 32,
            "n_parameters": 1000 * layers,
            "capability": {
                "mean": cap,
                "accuracy": {"1": cap, "3": cap},
                "guess_floor": {"1": 0.3, "3": 0.4},
            },
            "omega": {"rise": {"value": 0.1}, "bimodality": {"coefficient": 0.4}},
            "spikes": {"n_spikes": [0, 3]},
            "contraction": {"q": 0.9},
            "stability": {"score": stab},
            "tco": {"scores": {"stability": {"accuracy": stab}}},
        }

    rungs = [f"r{i}" for i in range(len(capabilities))]
    models = {
        r: {"trained": entry(c, s, i + 1), "null": entry(0.3, 0.1, i + 1)}
        for i, (r, c, s) in enumerate(zip(rungs, capabilities, stability))
    }
    return {"rungs": rungs, "models": models}


def test_correlations_and_verdict_rows():
    """Six rungs whose diagnostics are planted against capability: each verdict is the one its ranks call for,
    and the row says the correlation, its exact permutation p (2/720 for a perfect one) and its interval."""
    m = _fake_measurements([0.3, 0.4, 0.5, 0.7, 0.8, 0.95], [0.1, 0.2, 0.3, 0.5, 0.6, 0.9])
    planted = {  # diagnostic -> values on the six rungs (trained); the nulls stay constant
        "omega_rise": [0.6, 0.5, 0.4, 0.3, 0.2, 0.1],  # falls with capability: opposite to the paper's sign
        "bimodality": [0.40, 0.20, 0.50, 0.30, 0.60, 0.10],  # no order: the interval straddles 0
        "contraction": [0.99, 0.97, 0.95, 0.9, 0.8, 0.7],  # q falls with capability: the paper's sign (-)
    }
    for i, rung in enumerate(m["rungs"]):
        trained = m["models"][rung]["trained"]
        trained["omega"]["rise"]["value"] = planted["omega_rise"][i]
        trained["omega"]["bimodality"]["coefficient"] = planted["bimodality"][i]
        trained["contraction"]["q"] = planted["contraction"][i]
    m["correlations"] = report.correlations(m)
    expected = {  # diagnostic -> (verdict, rho)
        "omega_rise": ("does not", -1.0),
        "bimodality": ("inconclusive", -1 / 7),  # ranks 4 2 5 3 6 1: 1 - 6 * 40 / (6 * 35)
        "spikes": ("does not", None),  # the same count on every rung
        "contraction": ("predicts capability", -1.0),
        "stability": ("predicts capability", 1.0),
    }
    assert list(m["correlations"]) == list(report.DIAGNOSTICS) == list(expected)
    for name, (word, rho) in expected.items():
        level = m["correlations"][name]["level"]
        assert level["verdict"] == word and level["n"] == 6, name
        if rho is None:
            assert np.isnan(level["rho"]) and "same value on every rung" in level["reason"]
        else:
            assert level["rho"] == pytest.approx(rho), name
    for name in (
        "omega_rise",
        "contraction",
        "stability",
    ):  # perfect rank orders: exact p and a point interval
        level = m["correlations"][name]["level"]
        assert level["p_value"] == pytest.approx(2 / 720)
        assert level["ci"] == pytest.approx((level["rho"], level["rho"]))
    low, high = m["correlations"]["bimodality"]["level"]["ci"]
    assert low < 0 < high and m["correlations"]["bimodality"]["level"]["p_value"] > 0.05
    # trained minus a constant null keeps the ranks
    assert [c["shift"]["verdict"] for c in m["correlations"].values()] == [w for w, _ in expected.values()]

    table = report.ladder_table(m)
    assert list(table.rung) == m["rungs"]
    np.testing.assert_allclose(table["trained contraction"], planted["contraction"])
    np.testing.assert_allclose(table["trained capability"], [0.3, 0.4, 0.5, 0.7, 0.8, 0.95])
    np.testing.assert_allclose(table["null capability"], 0.3)
    assert table["layers"].tolist() == [1, 2, 3, 4, 5, 6]

    # the verdict table's rows, from the file's numbers (json round trip). Capability ranks exactly like parameter
    # count on these rungs (1000 per layer): nothing is left once size is controlled for, so no diagnostic holds,
    # however perfectly it ranks; the constant one does not hold
    rows = ladder_rows.diagnostic_rows(json.loads(json.dumps(m)))
    assert [row.verdict for row in rows] == ["inconclusive"] * 2 + ["does not hold"] + ["inconclusive"] * 2
    by_claim = {name: row for name, row in zip(report.DIAGNOSTICS, rows)}
    for name in ("omega_rise", "bimodality", "contraction", "stability"):
        assert (
            np.isnan(by_claim[name].value)
            and "size and capability cannot be told apart" in by_claim[name].reason
        )
        assert m["correlations"][name]["partial"]["capability_size_rho"] == pytest.approx(1.0)
    assert by_claim["stability"].measured.endswith("plain Spearman rho = +1.00 (n = 6, p = 0.003)")
    assert by_claim["contraction"].measured.endswith("plain Spearman rho = -1.00 (n = 6, p = 0.003)")
    assert "plain correlation: holds" in by_claim["stability"].reason
    assert "same value on every rung" in by_claim["spikes"].reason
    assert "expected sign -" in by_claim["contraction"].paper
    assert by_claim["omega_rise"].reason.endswith("trained-minus-null: does not hold")
    assert all(row.command == report.COMMAND and "ladder of 6" in row.model for row in rows)


def _planted_ladder(n_rungs=18, seed=0):
    """A ladder of ``n_rungs`` whose capability is half size, half something else (``extra``); planted diagnostics:
    ``bimodality`` tracks size only, ``stability`` tracks the part of capability that size does not explain."""
    rng = np.random.default_rng(seed)
    log_parameters = np.linspace(10, 14, n_rungs)
    size = (log_parameters - log_parameters.mean()) / log_parameters.std()
    extra = rng.normal(size=n_rungs)
    capability = 0.6 + 0.1 * (size + extra)
    m = _fake_measurements(list(capability), list(extra + 0.2 * rng.normal(size=n_rungs)))
    planted = {
        "bimodality": size + 0.3 * rng.normal(size=n_rungs),
        "omega_rise": rng.normal(size=n_rungs),
        "contraction": rng.normal(size=n_rungs),
    }
    for i, rung in enumerate(m["rungs"]):
        trained = m["models"][rung]["trained"]
        trained["n_parameters"] = int(np.exp(log_parameters[i]))
        trained["omega"]["rise"]["value"] = planted["omega_rise"][i]
        trained["omega"]["bimodality"]["coefficient"] = planted["bimodality"][i]
        trained["contraction"]["q"] = planted["contraction"][i]
    return m


def test_partial_spearman_given_size_and_holm_across_the_diagnostics():
    """18 planted rungs: a diagnostic that tracks size predicts capability by the plain rank correlation but not
    beyond size (partial ~0: inconclusive, size named); one that tracks capability beyond size holds after Holm.
    The Holm-adjusted p-values are the step-down ones by hand; the partial rho is the correlation of residual
    ranks."""
    m = _planted_ladder()
    c = m["correlations"] = report.correlations(m)
    size_only, beyond = c["bimodality"], c["stability"]
    assert size_only["level"]["verdict"] == "predicts capability"  # the plain test is fooled by size
    assert abs(size_only["partial"]["rho"]) < 0.3 and size_only["partial"]["verdict"] == "inconclusive"
    assert "may be size" in size_only["partial"]["reason"]
    assert beyond["partial"]["rho"] > 0.7 and beyond["partial"]["ci"][0] > 0
    assert beyond["partial"]["p_holm"] < 0.05 and beyond["partial"]["verdict"] == "predicts capability"
    assert c["spikes"]["partial"]["verdict"] == "does not" and np.isnan(c["spikes"]["partial"]["p_value"])

    # Holm by hand: step down over the five diagnostics, a missing p counted as 1
    raw = [c[name]["partial"]["p_value"] for name in report.DIAGNOSTICS]
    p = np.where(np.isfinite(raw), raw, 1.0)
    order, hand, running = np.argsort(p), np.empty(5), 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (5 - j) * p[i]))
        hand[i] = running
    np.testing.assert_allclose([c[name]["partial"]["p_holm"] for name in report.DIAGNOSTICS], hand)
    np.testing.assert_allclose(
        report.holm_family([0.01, 0.04, 0.03, 0.005, float("nan")]), [0.04, 0.09, 0.09, 0.025, 1.0]
    )
    assert all(c[name]["partial"]["n_tests"] == 5 for name in report.DIAGNOSTICS)

    rows = {
        name: row
        for name, row in zip(report.DIAGNOSTICS, ladder_rows.diagnostic_rows(json.loads(json.dumps(m))))
    }
    assert rows["stability"].verdict == "holds" and rows["bimodality"].verdict == "inconclusive"
    assert rows["bimodality"].reason.endswith("plain correlation: holds; trained-minus-null: holds")
    assert rows["stability"].value == pytest.approx(beyond["partial"]["rho"])
    assert rows["stability"].ci_low <= rows["stability"].value <= rows["stability"].ci_high

    # the partial rho is the correlation of the ranks of x and y once each loses its line on the ranks of z
    from scipy.stats import rankdata

    x, y, z = np.random.default_rng(4).normal(size=(3, 9))
    rx, ry, rz = rankdata(x), rankdata(y), rankdata(z)
    ex, ey = (r - np.polyval(np.polyfit(rz, r, 1), rz) for r in (rx, ry))
    assert rank_correlation.partial_spearman_ci(x, y, z, n_boot=50).rho == pytest.approx(
        np.corrcoef(ex, ey)[0, 1]
    )


def test_six_rungs_ranked_like_size_leave_little_to_test():
    """The trained ladder's ranks (capability against parameter count: two swapped pairs, rho 0.89): a diagnostic
    ordered like capability on every rung has p = 4/720 (four of the 720 orders fit as well once size is removed
    again), 0.028 after Holm over five; the smallest p any order reaches is 2/720; a size-only order has no partial
    left to find."""
    capability = [1, 2, 3, 4, 5, 6]
    size = [2, 1, 3, 4, 6, 5]
    r = rank_correlation.partial_spearman_ci(capability, capability, size)
    assert r.rho == pytest.approx(1.0) and r.p_value == pytest.approx(4 / 720)
    assert r.p_floor == pytest.approx(2 / 720)
    assert r.rho_xz == pytest.approx(0.8857142857142858)
    word, _ = rank_correlation.partial_verdict(r, min(1.0, 5 * r.p_value), 5, +1)
    assert word == "predicts capability"
    flat = rank_correlation.partial_spearman_ci(capability, size, size)
    assert np.isnan(flat.rho) and rank_correlation.partial_verdict(flat, 1.0, 5, +1)[0] == "inconclusive"


def test_a_rung_whose_weights_lack_a_tensor_is_refused_by_name(trained_tiny, monkeypatch, tmp_path):
    """Strict loading: a checksum that matches a file missing a layer's tensor would still load it random."""
    import shutil

    from safetensors.torch import load_file, save_file

    _, _, root = trained_tiny
    copy = tmp_path / "ladder"
    shutil.copytree(root, copy)
    weights = copy / TINY.name / "model.safetensors"
    tensors = load_file(weights)
    dropped = next(key for key in tensors if "mlp.down_proj" in key)
    save_file({k: v for k, v in tensors.items() if k != dropped}, weights, metadata={"format": "pt"})
    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", str(copy))
    monkeypatch.setattr(store, "verify", lambda folder: "0" * 64)  # the sums of a file saved this way
    with pytest.raises(IntegrityError, match="missing") as info:
        lb.load_model(f"ladder:{TINY.name}")
    assert dropped in str(info.value)


def test_tco_blocks_of_a_tiny_rung_and_the_rows_judged_against_the_null(trained_tiny, monkeypatch, tmp_path):
    """``diagnostics.tco_diagnostics`` gives the TCO block ``measure_model`` writes; ``ladder_rows.tco_rows`` judges
    each rung against its null with ``verdict.judge_tco``: the verdict table's ``tco`` rows."""
    from latentbook.analysis import tco as tco_analysis
    from latentbook.capturing.states import token_states

    _, _, root = trained_tiny
    monkeypatch.setenv("LATENTBOOK_LADDER_DIR", str(root))
    probes = diagnostics.probe_set(SPEC, 1024)
    states = token_states(lb.load_model(f"ladder:{TINY.name}"), probes.items, max_length=SPEC.seq_len)
    block = diagnostics.tco_diagnostics(states, probes, SPEC)
    json.dumps(block)
    scores = tco_analysis.TCOScores.from_dict(block["scores"])
    assert len(block["control_by_depth"]) == 2 and scores.depths == (1,)
    assert (
        scores.control.n > 900
        and 0 <= scores.control.ci[0] <= scores.control.accuracy <= scores.control.ci[1]
    )

    def planted(code, seed):
        p = synthetic.planted_binding(np.random.default_rng(seed), code, n_programs=120, n_depths=4, d=32)
        return {"scores": tco_analysis.score_token_states(p, p.written).to_dict()}

    m = _fake_measurements([0.3, 0.5, 0.9], [0.1, 0.2, 0.3])
    for i, r in enumerate(m["rungs"]):
        m["models"][r]["trained"]["tco"] = planted(("bag", "per step", "stable")[i], i)
        m["models"][r]["null"]["tco"] = planted("bag", 10 + i)
    path = tmp_path / "measurements.json"
    path.write_text(json.dumps(m))
    rows = ladder_rows.ladder_rows(path)  # no correlations in this file: only the tco rows
    assert [row.verdict for row in rows] == ["inconclusive", "does not hold", "holds"]
    assert all(row.claim == "tco" and "untrained null alone" in row.reason for row in rows)
    for row, rung in zip(rows, m["rungs"]):
        stability = m["models"][rung]["trained"]["tco"]["scores"]["stability"]
        assert (row.value, row.ci_low, row.ci_high) == (stability["accuracy"], *stability["ci"])
        assert row.ci_low <= row.value <= row.ci_high and row.model == f"ladder:{rung}"


def _rho_rows(a, b, axis=-1):
    """Spearman's rho of each row of ``a`` with the same row of ``b``, from scipy's ranks and Pearson r."""
    from scipy import stats

    ra, rb = np.broadcast_arrays(stats.rankdata(a, axis=axis), stats.rankdata(b, axis=axis))
    return stats.pearsonr(ra, rb, axis=axis).statistic


def test_spearman_p_and_interval_are_scipys_permutation_test_and_bootstrap():
    """``spearman_ci`` against ``scipy.stats``. The p-value is ``permutation_test`` over the pairings of ``y``
    with ``x``: exactly its exact test up to 8 rungs, both ways of making it two-sided (``|rho|`` against
    "greater", and scipy's doubled smaller tail, the same on untied ranks: a one-sided p fails), within
    Monte-Carlo error of it at 9 rungs (20000 random permutations against all 9!). The interval is
    ``bootstrap(paired=True, method="percentile")`` draw for draw on the same seed (the same ``rng.integers``
    call): resampling ``x`` and ``y`` apart fails."""
    from scipy import stats

    for seed, n in [(1, 5), (2, 6), (3, 6), (4, 7), (5, 8)]:
        x, y = np.random.default_rng(seed).normal(size=(2, n))
        y = y + (-1) ** seed * x  # rho of either sign
        r = rank_correlation.spearman_ci(x, y, n_boot=200)
        assert r.rho == pytest.approx(stats.spearmanr(x, y).statistic)
        exact = {"n_resamples": np.inf, "permutation_type": "pairings"}
        signed = stats.permutation_test((y,), lambda b, axis=-1, x=x: _rho_rows(x, b), **exact)
        size = stats.permutation_test(
            (y,), lambda b, axis=-1, x=x: np.abs(_rho_rows(x, b)), alternative="greater", **exact
        )
        assert r.p_value == pytest.approx(signed.pvalue, rel=1e-12) == pytest.approx(size.pvalue, rel=1e-12)
        assert 0.01 < r.p_value < 0.9, (seed, r.p_value)

    x, y = np.random.default_rng(9).normal(size=(2, 9))
    y = y + 0.5 * x
    p = rank_correlation.spearman_ci(x, y, n_boot=10).p_value
    exact = stats.permutation_test(
        (y,), lambda b, axis=-1: _rho_rows(x, b), n_resamples=np.inf, permutation_type="pairings"
    )
    assert p == pytest.approx(exact.pvalue, abs=4 * np.sqrt(exact.pvalue * (1 - exact.pvalue) / 20000))

    x, y = np.random.default_rng(10).normal(size=(2, 10))
    y = y + x
    for seed in (0, 7):
        r = rank_correlation.spearman_ci(x, y, n_boot=4000, seed=seed)
        boot = stats.bootstrap(
            (x, y),
            _rho_rows,
            paired=True,
            n_resamples=4000,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
        assert np.all(
            np.isfinite(boot.bootstrap_distribution)
        )  # scipy keeps an undefined rho: its interval NaN
        np.testing.assert_allclose(r.ci, boot.confidence_interval, rtol=1e-12)


def test_freedman_lane_p_is_scipys_permutation_test_of_the_residuals():
    """``partial_spearman_ci``'s p against ``scipy.stats.permutation_test``: the Freedman–Lane scheme written as a
    statistic of the permuted residuals of ``y``'s ranks on ``z``'s (the line on ``z`` removed again, by
    least squares here), correlated with ``x``'s residuals; exact over the ``n!`` permutations, ``|r|`` against
    "greater". Permuting ``y``'s ranks instead of the residuals fails; so does not removing ``z`` again."""
    from scipy import stats

    for seed, n in [(0, 5), (1, 6), (2, 6), (3, 7), (4, 8)]:
        x, y, z = np.random.default_rng(seed).normal(size=(3, n))
        y = y + 0.7 * x + z
        rx, ry, rz = stats.rankdata(x), stats.rankdata(y), stats.rankdata(z)
        design = np.column_stack([np.ones(n), rz])

        def residual(v, design=design):  # each row of v less its least-squares line on z's ranks
            return v - (design @ np.linalg.lstsq(design, np.transpose(v), rcond=None)[0]).T

        ex = residual(rx)
        result = stats.permutation_test(
            (residual(ry),),
            lambda e, axis=-1, ex=ex: np.abs(
                stats.pearsonr(*np.broadcast_arrays(ex, residual(e)), axis=-1).statistic
            ),
            n_resamples=np.inf,
            permutation_type="pairings",
            alternative="greater",
        )
        r = rank_correlation.partial_spearman_ci(x, y, z, n_boot=50)
        assert r.rho == pytest.approx(stats.pearsonr(ex, residual(ry)).statistic)
        assert r.p_value == pytest.approx(result.pvalue, rel=1e-12), (seed, r.p_value, result.pvalue)
        assert 0.005 < r.p_value < 0.9, (seed, r.p_value)
