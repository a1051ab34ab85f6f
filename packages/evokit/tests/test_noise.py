"""Noise reproducibility from a SamplingInfo, and the shared noise table (no copy per process)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from evokit import ESAgent, NoiseTable, NumpyMLP, SamplingInfo
from evokit.noise import GaussianSampling


@pytest.mark.parametrize("cached", [False, True])
def test_noise_is_reproduced_from_sampling_info_bytes(make_config, cached):
    config = make_config(cached=cached, std=0.2, cache_size=5000)
    agent = ESAgent(NumpyMLP([4, 8, 2], seed=1), config=config)
    agent.init_solver()
    clone = agent.clone(sampler_id=3)
    drawn = []
    for _ in range(4):
        info = clone.add_noise()
        drawn.append((info.to_bytes(), clone.params))
    # a fresh agent (same config, same model) rebuilds every sample from its bytes alone
    other = ESAgent(NumpyMLP([4, 8, 2], seed=1), config=config)
    other.init_solver()
    other_clone = other.clone(sampler_id=99)
    for data, params in drawn:
        other_clone.add_noise(SamplingInfo.from_bytes(data))
        np.testing.assert_array_equal(other_clone.params, params)
    # the noise really is std * N(0, 1) of the key
    info = SamplingInfo.from_bytes(drawn[0][0])
    if not cached:
        eps = np.random.default_rng(info.key[0]).standard_normal(agent.num_params, dtype=np.float32)
        np.testing.assert_allclose(drawn[0][1], agent.params + np.float32(0.2) * eps, rtol=1e-6)


def test_same_sampler_id_same_keys_different_ids_differ(make_config):
    agent = ESAgent(NumpyMLP([2, 2]), config=make_config())
    agent.init_solver()
    keys = [[agent.clone(sampler_id=s).add_noise().key for _ in range(1)] for s in (0, 0, 1)]
    assert keys[0] == keys[1] != keys[2]


def test_table_content_is_independent_of_threads_and_matches_the_shared_file(noise_dir):
    size = NoiseTable.CHUNK * 2 + 123
    table = NoiseTable.shared(5, size, str(noise_dir))
    private = NoiseTable.in_memory(5, size)
    np.testing.assert_array_equal(np.asarray(table.noise), private.noise)
    # chunk i is default_rng(SeedSequence(seed, spawn_key=(i,))) whatever the thread count
    chunk1 = np.random.default_rng(np.random.SeedSequence(5, spawn_key=(1,))).standard_normal(
        NoiseTable.CHUNK, dtype=np.float32)
    np.testing.assert_array_equal(private.noise[NoiseTable.CHUNK:2 * NoiseTable.CHUNK], chunk1)
    assert abs(float(private.noise.mean())) < 0.01 and abs(float(private.noise.std()) - 1) < 0.01
    view = table.get(10, 5)
    assert view.base is not None and not view.flags.writeable
    with pytest.raises(ValueError, match="outside the table"):
        table.get(size - 2, 5)


def test_seeded_sampling_matches_numpy():
    np.testing.assert_array_equal(GaussianSampling().noise(42, 7),
                                  np.random.default_rng(42).standard_normal(7, dtype=np.float32))


_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import psutil
    from evokit import NoiseTable
    proc = psutil.Process()
    before = proc.memory_full_info()
    t0 = time.perf_counter()
    table = NoiseTable.shared(11, int(sys.argv[2]), sys.argv[1])
    open_s = time.perf_counter() - t0
    total = float(np.asarray(table.noise, dtype=np.float32).sum(dtype=np.float64))  # touch every page
    after = proc.memory_full_info()
    print(json.dumps({"uss_growth_mb": (after.uss - before.uss) / 2**20,
                      "rss_growth_mb": (after.rss - before.rss) / 2**20, "open_s": open_s, "sum": total}))
    sys.stdout.flush()
    sys.stdin.read()  # stay alive (holding the mapping) until the parent closes stdin
""")


def test_each_extra_sampling_process_maps_the_table_without_copying(noise_dir):
    """The first process builds a 100 MB table; three more map it. Every process reads all of it; the private
    memory (USS) of each extra process grows by far less than the table (the target is <= 10 MB)."""
    psutil = pytest.importorskip("psutil")
    del psutil
    size = 25_000_000  # 100 MB of float32
    procs, results = [], []
    try:
        for _ in range(4):
            proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(noise_dir), str(size)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            procs.append(proc)
            results.append(json.loads(proc.stdout.readline()))
    finally:
        for proc in procs:
            proc.stdin.close()
            proc.wait(timeout=30)
    sums = {round(r["sum"], 3) for r in results}
    assert len(sums) == 1  # every process read the same table
    for extra in results[1:]:
        assert extra["uss_growth_mb"] <= 10.0, results
    # (the builder's USS does include the table while no other process maps it: unique, not copied)
