"""The observation filter: merging samplers' increments equals computing the statistics on the union of the data."""

from __future__ import annotations

import numpy as np
import pytest

from evokit import FilterStateError, MeanStdFilter


def _data(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(loc=[1.0, -3.0, 10.0], scale=[0.5, 2.0, 7.0], size=(n, 3))


def test_merged_increments_equal_statistics_of_the_union():
    learner = MeanStdFilter((3,))
    samplers = [MeanStdFilter((3,)) for _ in range(3)]
    chunks = [_data(i, n) for i, n in enumerate((7, 1, 50))]
    for sampler, chunk in zip(samplers, chunks, strict=True):
        sampler.load_state_dict(learner.state_dict())
        for start in range(0, len(chunk), 4):  # in several steps, as a rollout would
            sampler(chunk[start:start + 4])
    for sampler in samplers:
        learner.apply_increment(sampler.pop_increment())
    union = np.concatenate(chunks)
    assert learner.rs.n == len(union)
    np.testing.assert_allclose(learner.rs.mean, union.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(learner.rs.std, union.std(axis=0, ddof=1), rtol=1e-12)
    # a second round: samplers start from the merged statistics and only their new data is merged
    more = [_data(10 + i, 20) for i in range(3)]
    for sampler, chunk in zip(samplers, more, strict=True):
        sampler.load_state_dict(learner.state_dict())
        sampler(chunk)
        assert sampler.rs.n == len(union) + 20  # the sampler normalises with the merged statistics plus its own
    for sampler in samplers:
        learner.apply_increment(sampler.pop_increment())
    union = np.concatenate([union, *more])
    assert learner.rs.n == len(union)
    np.testing.assert_allclose(learner.rs.mean, union.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(learner.rs.var, union.var(axis=0, ddof=1), rtol=1e-12)


def test_normalisation_clip_and_update_prob():
    f = MeanStdFilter((3,), clip=2.0)
    x = _data(0, 1000)
    out = f(x)
    assert out.dtype == np.float32 and out.shape == (1000, 3)
    assert out.min() >= -2.0 and out.max() <= 2.0
    normed = f(x, update=False)
    assert f.rs.n == 1000  # update=False adds nothing
    assert abs(float(np.clip((x - x.mean(0)) / x.std(0, ddof=1), -2, 2).mean() - normed.mean())) < 1e-5
    sparse = MeanStdFilter((3,), update_prob=0.1, seed=0)
    sparse(x)
    assert 50 < sparse.rs.n < 150
    assert sparse.pop_increment()["n"] == sparse.rs.n
    assert sparse.pop_increment()["n"] == 0
    with pytest.raises(ValueError, match="filter_update_prob"):
        MeanStdFilter((3,), update_prob=1.5)


@pytest.mark.parametrize("corrupt, match", [
    (lambda s: s.pop("m2"), "lacks"),
    (lambda s: s.__setitem__("mean", np.zeros(4)), "another environment"),
    (lambda s: s.__setitem__("n", np.asarray(-1)), "integer >= 0"),
    (lambda s: s.__setitem__("n", np.asarray(2.5)), "integer >= 0"),
    (lambda s: s["m2"].__setitem__(0, np.nan), "NaN"),
    (lambda s: s["m2"].__setitem__(0, -1.0), "negative"),
])
def test_corrupted_state_is_a_clear_error(corrupt, match):
    f = MeanStdFilter((3,))
    f(_data(0, 10))
    state = f.state_dict()
    corrupt(state)
    with pytest.raises(FilterStateError, match=match) as err:
        MeanStdFilter((3,)).load_state_dict(state)
    assert "state_dict()" in str(err.value)  # names the fix
    with pytest.raises(FilterStateError, match=match):
        MeanStdFilter((3,)).apply_increment(state)
