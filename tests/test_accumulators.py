"""Streaming accumulators against the batch computation on the same data."""

import numpy as np
import pytest
import torch

from latentbook.capturing.accumulators import (
    LayerStats,
    Moments,
    OmegaStats,
    TokenReservoir,
    omega_of,
    token_keys,
)


def _data(n=3000, d=24, seed=0):
    rng = np.random.default_rng(seed)
    # a large mean and unequal scales: centring after the fact would lose digits here, Chan's update does not
    x = rng.normal(size=(n, d)) * rng.uniform(0.1, 5, size=d) + 40.0
    return torch.from_numpy(x)


def _rel(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max())


@pytest.mark.parametrize("splits", [[3000], [1, 999, 2000], [7] * 428 + [4]])
def test_moments_merge_equals_batch(splits):
    x = _data()
    whole = Moments(x.shape[1], precision=torch.float64)
    whole.add(x)
    parts = []
    for chunk in torch.split(x, splits):
        m = Moments(x.shape[1], precision=torch.float64)
        m.add(chunk)
        parts.append(m)
    merged = parts[0]
    for m in parts[1:]:
        merged.merge(m)
    xn = x.numpy()
    assert merged.n == whole.n == len(xn)
    assert _rel(merged.mean, xn.mean(0)) < 1e-12
    assert _rel(merged.covariance(), np.cov(xn.T, bias=True)) < 1e-10
    assert _rel(merged.second_moment(), xn.T @ xn / len(xn)) < 1e-10
    assert _rel(merged.covariance(), whole.covariance()) < 1e-10


def test_float32_batches_are_close_to_float64():
    x = _data()
    m32, m64 = Moments(x.shape[1], precision=torch.float32), Moments(x.shape[1], precision=torch.float64)
    for chunk in torch.split(x, 128):
        m32.add(chunk.float())
        m64.add(chunk)
    assert _rel(m32.covariance(), m64.covariance()) < 1e-5


def test_omega_reference_values():
    d = 256
    one_hot = torch.zeros(d)
    one_hot[3] = 5.0
    assert omega_of(one_hot).item() == pytest.approx(1 - 1 / np.sqrt(d), abs=1e-6)
    assert omega_of(torch.full((d,), -2.0)).item() == pytest.approx(0.0, abs=1e-6)
    gauss = torch.randn(20000, 4096, generator=torch.Generator().manual_seed(0))
    assert omega_of(gauss).mean().item() == pytest.approx(1 - np.sqrt(2 / np.pi), abs=2e-3)
    assert omega_of(torch.zeros(d)).item() == 0.0


def test_omega_stats_moments_and_histogram():
    values = torch.from_numpy(np.random.default_rng(1).beta(2, 5, size=5000))
    a, b = OmegaStats(), OmegaStats()
    a.add_values(values[:1234])
    b.add_values(values[1234:])
    a.merge(b)
    v = values.numpy()
    var, skew, kurt = a.central_moments()
    assert a.n == 5000 and a.mean == pytest.approx(v.mean(), rel=1e-12)
    assert var == pytest.approx(v.var(), rel=1e-9)
    assert skew == pytest.approx(((v - v.mean()) ** 3).mean() / v.std() ** 3, rel=1e-8)
    assert kurt == pytest.approx(((v - v.mean()) ** 4).mean() / v.var() ** 2, rel=1e-8)
    assert np.array_equal(a.counts.numpy(), np.histogram(v, bins=200, range=(0, 1))[0])


def test_layer_stats_state_round_trip():
    x = _data(200, 8).float()
    s = LayerStats(8)
    s.add(x)
    t = LayerStats(8)
    t.load_state_dict(s.state_dict())
    assert torch.equal(t.moments.m2, s.moments.m2) and torch.equal(t.abs.max, s.abs.max)
    assert t.omega.mean == s.omega.mean


def test_reservoir_is_independent_of_batching():
    rng = np.random.default_rng(2)
    prompt_ids = np.repeat(np.arange(50), 20)
    positions = np.tile(np.arange(20), 50)
    values = torch.from_numpy(rng.normal(size=(3, 1000, 4))).float()
    keys = token_keys(prompt_ids, positions)
    whole = TokenReservoir(64, 3, 4)
    whole.offer(keys, prompt_ids, positions, values)
    pieces = [TokenReservoir(64, 3, 4) for _ in range(3)]
    for i, piece in enumerate(pieces):
        sel = np.arange(i, 1000, 3)
        piece.offer(keys[sel], prompt_ids[sel], positions[sel], values[:, sel])
    pieces[0].merge(pieces[1])
    pieces[0].merge(pieces[2])
    assert np.array_equal(pieces[0].keys, whole.keys)
    assert torch.equal(pieces[0].values, whole.values)
    # the kept tokens are those of smallest key: a uniform sample
    assert np.array_equal(np.sort(whole.keys), np.sort(keys)[:64])


def test_token_keys_are_uniform_and_deterministic():
    ids, pos = np.repeat(np.arange(300), 100), np.tile(np.arange(100), 300)
    keys = token_keys(ids, pos)
    assert np.array_equal(keys, token_keys(ids, pos))
    assert len(np.unique(keys)) == len(keys)
    counts = np.histogram(keys, bins=10, range=(0, 1))[0]
    assert np.all(np.abs(counts - 3000) < 300)


def test_moments_pending_blocks_flush_exactly():
    """Batches pile up in a pending Gram and are folded in every FLUSH_TOKENS tokens: still exact in float64."""
    x = _data()
    m = Moments(x.shape[1], precision=torch.float64)
    m.FLUSH_TOKENS = 50  # many flushes, each over several batches of unequal means
    with torch.inference_mode():  # as inside lb.capture; reads and merges happen outside
        for chunk in torch.split(x, [3, 40, 17, 100, 1, 639, 2200]):
            m.add(chunk + 5.0 * chunk.shape[0] % 7)
    ref = torch.cat(
        [c + 5.0 * c.shape[0] % 7 for c in torch.split(x, [3, 40, 17, 100, 1, 639, 2200])]
    ).numpy()
    assert m.n == len(ref)
    assert _rel(m.mean, ref.mean(0)) < 1e-12
    assert _rel(m.covariance(), np.cov(ref.T, bias=True)) < 1e-10
    other = Moments(x.shape[1], precision=torch.float64)
    other.add(x[:10])
    m.merge(other)
    both = np.concatenate([ref, x[:10].numpy()])
    assert _rel(m.covariance(), np.cov(both.T, bias=True)) < 1e-10


def test_reservoir_many_small_offers_equal_one():
    rng = np.random.default_rng(3)
    prompt_ids = np.repeat(np.arange(40), 25)
    positions = np.tile(np.arange(25), 40)
    values = torch.from_numpy(rng.normal(size=(2, 1000, 3))).float()
    keys = token_keys(prompt_ids, positions)
    whole = TokenReservoir(50, 2, 3)
    whole.offer(keys, prompt_ids, positions, values)
    streamed = TokenReservoir(50, 2, 3)
    with torch.inference_mode():
        for start in range(0, 1000, 37):  # evictions into reused slots, batch after batch
            sel = np.arange(start, min(start + 37, 1000))
            streamed.offer(keys[sel], prompt_ids[sel], positions[sel], values[:, sel])
    assert np.array_equal(streamed.keys, whole.keys)
    assert np.array_equal(streamed.positions, whole.positions)
    assert torch.equal(streamed.values, whole.values)
    copy = TokenReservoir(50, 2, 3)
    copy.load_state_dict(streamed.state_dict())
    copy.offer(keys[:5] * 0, prompt_ids[:5], positions[:5], values[:, :5])  # must not write into `streamed`
    assert torch.equal(streamed.values, whole.values)


@pytest.mark.parametrize("d", [300, 1030])  # 4 blocks of 75; 8 blocks of 129, the last one narrower
def test_moments_block_triangular_gram_matches_numpy(d):
    """d >= 256: only the upper block triangle of each batch's Gram is computed, then mirrored."""
    rng = np.random.default_rng(4)
    x = torch.from_numpy(rng.normal(size=(900, d)) @ rng.normal(size=(d, d)) / 10 + 3.0)
    m = Moments(d, precision=torch.float64)
    m.FLUSH_TOKENS = 400
    for chunk in torch.split(x, 128):
        m.add(chunk)
    assert _rel(m.covariance(), np.cov(x.numpy().T, bias=True)) < 1e-10
    m32 = Moments(d)
    for chunk in torch.split(x.float(), 128):
        m32.add(chunk)
    assert _rel(m32.covariance(), np.cov(x.numpy().T, bias=True)) < 1e-5


def test_tf32_is_allowed_only_inside_the_gram():
    from latentbook.capturing.accumulators import _tf32_matmul

    matmul = torch.backends.cuda.matmul
    before = matmul.allow_tf32
    try:
        matmul.allow_tf32 = False
        with _tf32_matmul(True):
            assert matmul.allow_tf32
        assert not matmul.allow_tf32
        with _tf32_matmul(False):
            assert not matmul.allow_tf32
    finally:
        matmul.allow_tf32 = before


def test_folds_in_flight_give_the_same_sums(monkeypatch):
    """The CUDA path of ``Moments``: a folded block is copied to the host and added at the next fold of any
    ``Moments`` (one in flight at a time) or at a read. Simulated on the CPU with copies and a stand-in
    event: the sums are bit-identical to folding at once, and ``n`` counts the block in flight."""
    from latentbook.capturing import accumulators

    class Event:
        def synchronize(self):
            pass

    class CopiedFold(accumulators._Fold):
        def __init__(self, counts, gram, means):
            super().__init__(counts, gram.clone(), means.clone())  # as the pinned copies would be
            self.event = Event()

    x = _data(600, 300)
    chunks = torch.split(x.float(), [50, 70, 33, 90, 100, 1, 256])

    def run(folds):
        m = [Moments(300, batches_per_block=1), Moments(300)]
        m[1].FLUSH_TOKENS = 100
        seen, flying = [], 0
        for chunk in chunks:
            for moments in m:
                moments.add(chunk)
                flying += sum(other._in_flight is not None for other in m)
                assert sum(other._in_flight is not None for other in m) <= 1
            seen.append([moments.n for moments in m])
        accumulators.settle_folds()
        return m, seen, flying

    direct, seen_direct, flying_direct = run(None)
    monkeypatch.setattr(accumulators, "_Fold", CopiedFold)
    deferred, seen_deferred, flying = run(CopiedFold)
    assert flying_direct == 0 and flying > 5 and seen_direct == seen_deferred
    for a, b in zip(direct, deferred):
        assert torch.equal(a.m2, b.m2) and torch.equal(a.mean, b.mean) and a.n == b.n == 600
    ref = np.cov(x.float().double().numpy().T, bias=True)
    assert _rel(deferred[0].covariance(), ref) < 1e-5
    assert all(m._in_flight is None and m._gram is None for m in deferred)  # a read frees everything
