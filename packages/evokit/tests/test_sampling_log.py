"""SamplingInfo bytes and the binary sampling log: round trip, the tutorial's layout, truncation, corruption."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from evokit import (
    SamplingInfo,
    SamplingLogError,
    SamplingLogWriter,
    TruncatedLogError,
    read_sampling_log,
    write_sampling_log,
)
from evokit.config import SamplingInfoProto

INFOS = [SamplingInfo((123456,), 0), SamplingInfo((123456,), 0, negative=True), SamplingInfo((7, 2), 41),
         SamplingInfo((2**31 - 2,), 3)]
REWARDS = [1.5, -2.25, 500.0, 0.0]


def test_sampling_info_bytes_round_trip_and_compactness():
    for info in INFOS:
        data = info.to_bytes()
        assert SamplingInfo.from_bytes(data) == info
        assert len(data) <= 12
    with pytest.raises(ValueError, match="non-negative"):
        SamplingInfo((-1,), 0)


def test_sampling_info_is_wire_compatible_with_the_original_proto():
    # original: message SamplingInfo { repeated int32 key = 1; optional int32 model_iter_id = 2; }
    data = SamplingInfo((300, 5), 2).to_bytes()
    assert data == bytes([0x08, 0xAC, 0x02, 0x08, 0x05, 0x10, 0x02])
    proto = SamplingInfoProto()
    proto.ParseFromString(data)
    assert list(proto.key) == [300, 5] and proto.model_iter_id == 2


def test_log_round_trip_and_tutorial_layout(tmp_path):
    path = tmp_path / "sampling_log"
    assert write_sampling_log(path, INFOS, REWARDS) == 4
    infos, rewards = read_sampling_log(path)
    assert infos == INFOS
    np.testing.assert_array_equal(rewards, np.asarray(REWARDS, dtype=np.float32))
    # the tutorial's layout: float reward, int size, size bytes of SamplingInfo
    raw = path.read_bytes()
    reward, size = struct.unpack_from("<fi", raw, 0)
    assert reward == 1.5 and raw[8:8 + size] == INFOS[0].to_bytes()
    # append mode adds records
    with SamplingLogWriter(path, "ab") as log:
        log.write(9.0, INFOS[2])
    infos, rewards = read_sampling_log(path)
    assert len(infos) == 5 and infos[-1] == INFOS[2] and rewards[-1] == 9.0


def test_reused_log_path_holds_only_the_last_epoch(tmp_path):
    """The tutorial's loop writes ./sampling_log each epoch then updates from it: no earlier epoch's records."""
    path = tmp_path / "sampling_log"
    for epoch in range(3):
        with SamplingLogWriter(path) as log:
            log.write_many([float(epoch)] * 2, INFOS[:2])
        infos, rewards = read_sampling_log(path)
        assert infos == INFOS[:2]
        np.testing.assert_array_equal(rewards, [epoch, epoch])


def test_truncated_log_keeps_every_complete_record(tmp_path):
    path = tmp_path / "sampling_log"
    write_sampling_log(path, INFOS, REWARDS)
    full = path.read_bytes()
    last_start = len(full) - (8 + len(INFOS[-1].to_bytes()))
    for cut in range(last_start + 1, len(full)):
        path.write_bytes(full[:cut])
        with pytest.raises(TruncatedLogError, match="3 complete records") as excinfo:
            read_sampling_log(path)
        assert excinfo.value.sampling_infos == INFOS[:3]
        np.testing.assert_array_equal(excinfo.value.rewards, np.asarray(REWARDS[:3], dtype=np.float32))
        assert excinfo.value.complete_bytes == last_start
        infos, rewards = read_sampling_log(path, allow_truncated=True)
        assert infos == INFOS[:3] and len(rewards) == 3


def test_corrupt_and_missing_logs(tmp_path):
    path = tmp_path / "bad"
    path.write_bytes(struct.pack("<fi", 1.0, -5) + b"\x00" * 8)
    with pytest.raises(SamplingLogError, match="size field -5"):
        read_sampling_log(path)
    path.write_bytes(struct.pack("<fi", 1.0, 2) + b"\xff\xff")
    with pytest.raises(SamplingLogError, match="not a serialised SamplingInfo"):
        read_sampling_log(path)
    with pytest.raises(FileNotFoundError, match="sampling log not found"):
        read_sampling_log(tmp_path / "missing")
    with SamplingLogWriter(tmp_path / "w", "wb") as log, pytest.raises(ValueError, match="finite"):
        log.write(float("inf"), INFOS[0])
