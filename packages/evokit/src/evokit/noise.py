"""Gaussian noise for the perturbations: seeded on demand, or read from a noise table shared by a machine.

``GaussianSampling``: the key is an RNG seed; the noise is ``default_rng(seed).standard_normal(n)`` (float32),
regenerated wherever it is needed (O(n) work per sample, no memory).

``CachedGaussianSampling``: the key is an offset into a table of ``cache_size`` float32 standard normals, and the
noise is the view ``table[offset:offset + n]`` (no work, no copy). As in OpenAI's ``SharedNoiseTable``
(Salimans et al. 2017), the table is identical everywhere because it is generated from the config's seed. Unlike
it, the table lives in a memory-mapped file (``/dev/shm`` when available): the first process on a machine builds
it (under a file lock) and every other process of the machine maps the same pages read-only, so an additional
sampling process costs page-table entries, not a copy.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from evokit.errors import ConfigError

__all__ = ["GaussianSampling", "CachedGaussianSampling", "NoiseTable", "default_noise_dir", "make_sampling"]

logger = logging.getLogger(__name__)

#: Seeds drawn for ``GaussianSampling`` are below this (so they fit the original EvoKit's ``int32`` key).
MAX_SEED = 2**31 - 1


def default_noise_dir() -> str:
    """The directory of shared noise tables: ``$EVOKIT_NOISE_DIR``, else ``/dev/shm`` (RAM), else the temp dir."""
    env = os.environ.get("EVOKIT_NOISE_DIR")
    if env:
        return env
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return tempfile.gettempdir()


class NoiseTable:
    """A read-only float32 table of standard normal noise.

    Args:
        noise: float32 [size] the table (a ``np.memmap`` for a shared table).
        path: the backing file of a shared table, or None for a private in-memory table.
    """

    CHUNK = 1 << 20

    def __init__(self, noise: np.ndarray, path: str | None = None) -> None:
        if noise.dtype != np.float32 or noise.ndim != 1:
            raise TypeError(f"noise must be a 1-D float32 array, got {noise.dtype} {noise.shape}")
        self.noise = noise
        self.path = path

    @property
    def size(self) -> int:
        """Number of float32 entries."""
        return int(self.noise.shape[0])

    @staticmethod
    def generate(seed: int, size: int, out: np.ndarray | None = None) -> np.ndarray:
        """Return ``size`` float32 standard normals determined by ``seed`` (written into ``out`` if given).

        The table is made of chunks of ``CHUNK`` entries, chunk ``i`` drawn from
        ``default_rng(SeedSequence(seed, spawn_key=(i,)))``, so its content does not depend on how many threads
        fill it; chunks are filled by a small thread pool (numpy's generators release the GIL).
        """
        size = int(size)
        if out is None:
            out = np.empty(size, dtype=np.float32)
        chunk = NoiseTable.CHUNK

        def fill(i: int) -> None:
            rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(i,)))
            rng.standard_normal(dtype=np.float32, out=out[i * chunk:(i + 1) * chunk])

        n_chunks = (size + chunk - 1) // chunk
        workers = min(4, os.cpu_count() or 1, n_chunks)
        if workers <= 1:
            for i in range(n_chunks):
                fill(i)
        else:
            with ThreadPoolExecutor(workers) as pool:
                list(pool.map(fill, range(n_chunks)))
        return out

    @classmethod
    def in_memory(cls, seed: int, size: int) -> NoiseTable:
        """Build a private table in this process's memory."""
        return cls(cls.generate(seed, size))

    @classmethod
    def shared(cls, seed: int, size: int, directory: str | None = None) -> NoiseTable:
        """Map the machine's shared table for ``(seed, size)``, building it first if no process has.

        The file is ``<directory>/evokit-noise-s<seed>-n<size>.f32``; it is written to a temporary name and
        renamed when complete, under an exclusive ``flock`` so that concurrent processes build it once.

        Args:
            seed: the RNG seed (``gaussian_sampling.seed``).
            size: the number of float32 entries (``gaussian_sampling.cache_size``).
            directory: where the table lives; default :func:`default_noise_dir`.

        Raises:
            ValueError: ``size`` < 1.
            OSError: the directory is not writable and the table does not exist yet.
        """
        if size < 1:
            raise ValueError(f"noise table size must be >= 1, got {size}")
        directory = directory or default_noise_dir()
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, f"evokit-noise-s{int(seed)}-n{int(size)}.f32")
        nbytes = int(size) * 4
        if not (os.path.isfile(path) and os.path.getsize(path) == nbytes):
            with open(path + ".lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    if not (os.path.isfile(path) and os.path.getsize(path) == nbytes):
                        tmp = f"{path}.tmp-{os.getpid()}"
                        with open(tmp, "wb") as f:
                            f.truncate(nbytes)
                        table = np.memmap(tmp, dtype=np.float32, mode="r+", shape=(int(size),))
                        cls.generate(seed, size, out=table)
                        table.flush()
                        del table
                        os.replace(tmp, path)
                        logger.info("built shared noise table %s (%d MB)", path, nbytes >> 20)
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
        noise = np.memmap(path, dtype=np.float32, mode="r", shape=(int(size),))
        return cls(noise, path)

    def unlink(self) -> None:
        """Delete the shared table's file (mappings that exist stay valid until closed)."""
        if self.path is not None:
            for p in (self.path, self.path + ".lock"):
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass

    def get(self, offset: int, n: int) -> np.ndarray:
        """Return the view ``noise[offset:offset + n]`` (float32 [n], read-only, no copy).

        Raises:
            ValueError: the slice does not fit in the table.
        """
        if offset < 0 or offset + n > self.size:
            raise ValueError(f"noise offset {offset} + {n} entries is outside the table of {self.size} entries; "
                             "was the log written with a different cache_size?")
        return self.noise[offset:offset + n]


class GaussianSampling:
    """Seeded Gaussian noise: key = seed, ``noise = default_rng(seed).standard_normal(n)`` (float32)."""

    cached = False

    def draw_key(self, rng: np.random.Generator, n: int) -> int:
        """Draw a new key (a seed in [0, 2**31 - 1)) from the sampling agent's key generator."""
        return int(rng.integers(0, MAX_SEED))

    def noise(self, key: int, n: int) -> np.ndarray:
        """Return the float32 [n] standard normal noise of ``key``."""
        return np.random.default_rng(int(key)).standard_normal(int(n), dtype=np.float32)


class CachedGaussianSampling:
    """Noise read from a :class:`NoiseTable`: key = offset.

    Args:
        table: the noise table (shared by every agent of the machine that uses the same seed and size).
    """

    cached = True

    def __init__(self, table: NoiseTable) -> None:
        self.table = table

    def draw_key(self, rng: np.random.Generator, n: int) -> int:
        """Draw an offset in [0, table size - n]."""
        if n > self.table.size:
            raise ConfigError(f"gaussian_sampling.cache_size ({self.table.size}) must be >= the number of "
                              f"parameters ({n}); raise cache_size in the config")
        return int(rng.integers(0, self.table.size - n + 1))

    def noise(self, key: int, n: int) -> np.ndarray:
        """Return the float32 [n] view of the table at offset ``key``."""
        return self.table.get(int(key), int(n))


def make_sampling(sampling_config, *, noise_dir: str | None = None) -> GaussianSampling | CachedGaussianSampling:
    """Build the sampling method of a ``SamplingConfig`` message (shared table when ``cached``)."""
    gs = sampling_config.gaussian_sampling
    if gs.cached:
        return CachedGaussianSampling(NoiseTable.shared(gs.seed, gs.cache_size, noise_dir))
    return GaussianSampling()
