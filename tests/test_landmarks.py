"""The field's depth landmarks: massive-activation onset, relative update norms, the logit lens (exact against a
direct transformers computation) and its convergence depth."""

import numpy as np
import pytest
import torch

from latentbook.analysis import landmarks
from latentbook.capturing.hooks import residual_hooks
from latentbook.capturing.lens import lens_kl
from latentbook.errors import InvalidInputError

from .conftest import SHORT_PROMPTS


def test_massive_onset_is_the_abrupt_rise_that_stays_large():
    gamma = np.linspace(0, 1, 11)
    largest = np.array([1, 3, 9, 12, 13, 400, 410, 420, 430, 300, 200.0])
    ratio = np.array([2, 5, 20, 30, 30, 500, 500, 500, 450, 300, 150.0])
    onset = landmarks.massive_onset(gamma, largest, ratio)
    assert (onset.gamma, onset.found) == (0.5, True)
    assert onset.rise == pytest.approx(400 / 13)
    gentle = landmarks.massive_onset(gamma, np.geomspace(1, 1000, 11), np.full(11, 500.0))
    assert not gentle.found  # a steady growth is no onset, however large
    small = landmarks.massive_onset(gamma, largest, np.full(11, 20.0))
    assert not small.found  # a rise of every coordinate together is no massive coordinate
    with pytest.raises(InvalidInputError):
        landmarks.massive_onset(gamma, np.zeros(11), ratio)


def test_update_norms_are_relative_and_resample_prompts():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((64, 16))
    scale = np.array([1.0, 1.5, 1.5 * 1.1, 1.5 * 1.1 * 1.01])
    vectors = (
        scale[:, None, None] * base[None]
    )  # pure rescaling: ||h_l - h_(l-1)|| / ||h_(l-1)|| = s_l / s_(l-1) - 1
    groups = np.repeat(np.arange(16), 4)
    profile = landmarks.update_norms(vectors, groups, np.linspace(0, 1, 4), n_boot=50)
    assert np.allclose(profile.mean, [0.5, 0.1, 0.01])
    assert np.allclose(profile.ci[:, 0], profile.mean) and np.allclose(profile.ci[:, 1], profile.mean)
    assert np.allclose(profile.gamma, np.linspace(0, 1, 4)[1:])


def test_token_mean_profile_weights_tokens_by_their_prompts_draws():
    values = np.array([[0.0], [0.0], [0.0], [3.0]])  # prompt 0 has three tokens at 0, prompt 1 one at 3
    groups = np.array([0, 0, 0, 1])
    profile = landmarks.token_mean_profile(values, groups, np.array([0.5]), n_boot=400)
    # a draw takes prompt 0 twice (mean 0), prompt 1 twice (3) or each once (0.75), never a token alone
    assert set(np.round(profile.draws[:, 0], 6)) == {0.0, 0.75, 3.0}
    assert profile.mean[0] == 0.75


def test_convergence_is_the_first_depth_from_which_it_stays_low():
    gamma = np.linspace(0, 1, 8)
    kl = np.array(
        [9.0, 10.0, 8.0, 0.5, 2.0, 0.8, 0.3, 0.0]
    )  # dips at 3, back above 1.0 at 4, stays low from 5
    profile = landmarks.DepthProfile(gamma, kl, np.stack([kl, kl], 1), np.stack([kl, kl]))
    result = landmarks.convergence(profile)
    assert result.gamma == pytest.approx(gamma[5])
    assert result.ci == (pytest.approx(gamma[5]), pytest.approx(gamma[5]))
    assert landmarks.near(result.ci, 0.42, 0.1) is False
    edge = kl.copy()
    edge[0] = 1000.0  # a tied embedding's lens: far from everything, and not read
    assert landmarks.convergence(
        landmarks.DepthProfile(gamma, edge, profile.ci, np.stack([edge, edge]))
    ).gamma == (pytest.approx(gamma[5]))
    assert landmarks.convergence(profile, edge=0).gamma == pytest.approx(gamma[5])
    assert landmarks.convergence(profile, fraction=0.5).gamma == pytest.approx(gamma[3])  # 0.5, 2.0, 0.8 <= 4
    assert landmarks.near((0.3, 0.6), 0.42, 0.1) is True


def _states_and_direct_kl(loaded, prompts):
    """Pre-norm residual vectors at every depth through the hooks, and the KL computed the transformers way."""
    enc = loaded.tokenizer(prompts, return_tensors="pt", padding=True)
    kept = {}
    with torch.inference_mode(), residual_hooks(loaded.anatomy, lambda d, h: kept.__setitem__(d, h)):
        out = loaded.model(**enc, output_hidden_states=True, use_cache=False)
    real = enc["attention_mask"].bool()
    vectors = torch.stack([kept[d][real] for d in range(loaded.n_layers + 1)]).float()
    with torch.inference_mode():
        final = torch.log_softmax(out.logits[real].double(), -1)
        direct = []
        for depth, hidden in enumerate(out.hidden_states):
            logits = (
                out.logits
                if depth == loaded.n_layers
                else loaded.model.lm_head(loaded.model.model.norm(hidden))
            )
            logp = torch.log_softmax(logits[real].double(), -1)
            direct.append((final.exp() * (final - logp)).sum(-1))
    return vectors.numpy(), torch.stack(direct).numpy()


def test_lens_kl_equals_a_direct_transformers_computation(tiny):
    vectors, direct = _states_and_direct_kl(tiny, SHORT_PROMPTS)
    ours = lens_kl(tiny, vectors, chunk=7)
    assert ours.shape == direct.shape
    assert np.abs(ours[-1]).max() < 1e-9  # the model's own distribution
    assert np.max(np.abs(ours - direct) / np.maximum(direct, 1e-3)) < 1e-5
    assert direct[:-1].min() > 1e-3  # a random model's early depths do differ from its output


def test_lens_needs_a_language_model_head_and_finite_vectors(tiny):
    with pytest.raises(InvalidInputError, match="n_depths"):
        lens_kl(tiny, np.zeros((1, 3, tiny.d_model), dtype=np.float32))
    bad = np.ones((2, 3, tiny.d_model), dtype=np.float32)
    bad[0, 0, 0] = np.nan
    with pytest.raises(InvalidInputError, match="NaN"):
        lens_kl(tiny, bad)


def test_update_norms_of_a_capture_equal_a_direct_transformers_computation(tiny):
    """The relative updates chapter 9 reads from a capture's token sample, against ``output_hidden_states`` (the
    last depth before the final norm, from a hook on the last layer) on prompts written here."""
    import latentbook as lb
    from latentbook.study.run_landmarks import sample

    prompts = [
        "The river bends twice before it reaches the old mill by the bridge.",
        "Seven ships left the harbour at dawn and only five came back that night.",
        "A quiet library keeps its rarest maps in a locked drawer near the window.",
        "Every spring the orchard fills with bees, and the farmer counts the hives.",
    ]
    cap = lb.capture(tiny, prompts, n_vectors=4096, progress=False)
    vectors, groups = sample(cap)
    ours = landmarks.update_norms(vectors, groups, cap.gamma, n_boot=10).mean
    enc = tiny.tokenizer(prompts, return_tensors="pt", padding=True)
    last = {}
    hook = tiny.model.model.layers[-1].register_forward_hook(
        lambda _m, _a, out: last.__setitem__("h", out[0] if isinstance(out, tuple) else out)
    )
    try:
        with torch.inference_mode():
            out = tiny.model(**enc, output_hidden_states=True, use_cache=False)
    finally:
        hook.remove()
    keep = enc["attention_mask"].bool()
    keep[:, 0] = False  # the first position, as the sample leaves it out
    states = [h[keep].double() for h in out.hidden_states[:-1]] + [last["h"][keep].double()]
    direct = np.array(
        [
            ((after - before).norm(dim=-1) / before.norm(dim=-1)).mean().item()
            for before, after in zip(states[:-1], states[1:])
        ]
    )
    assert vectors.shape[1] == int(keep.sum())  # every token is in the sample
    assert np.max(np.abs(ours - direct) / direct) < 1e-5
