import msgpack
import numpy as np
import pytest

from policies import wire


@pytest.mark.parametrize("dtype", ["uint8", "float32", "float64", "int64", "bool", "<U3"])
def test_roundtrip_arrays_keep_dtype_shape_values(dtype):
    a = (np.arange(24).reshape(2, 3, 4) % 3).astype(dtype)
    msg = {"observation/image": a, "prompt": "pick", "nested": [a[0], {"x": np.float32(1.5)}]}
    out = wire.unpackb(wire.packb(msg))
    assert out["prompt"] == "pick"
    np.testing.assert_array_equal(out["observation/image"], a)
    assert out["observation/image"].dtype == a.dtype and out["observation/image"].shape == a.shape
    np.testing.assert_array_equal(out["nested"][0], a[0])
    assert out["nested"][1]["x"] == np.float32(1.5) and isinstance(out["nested"][1]["x"], np.float32)


def test_non_contiguous_arrays_are_sent_in_c_order():
    a = np.arange(12, dtype=np.float32).reshape(3, 4).T
    np.testing.assert_array_equal(wire.unpackb(wire.packb(a)), a)


def test_frames_follow_openpis_layout_byte_for_byte():
    """Decode the frame with plain msgpack: binary keys __ndarray__/data/dtype/shape."""
    a = np.array([[1, 2], [3, 4]], dtype="<f4")
    raw = msgpack.unpackb(wire.packb({"actions": a}), raw=False)
    frame = raw["actions"]
    assert frame[b"__ndarray__"] is True and frame[b"dtype"] == "<f4" and list(frame[b"shape"]) == [2, 2]
    assert frame[b"data"] == a.tobytes()
    # and a frame built by hand the same way decodes to the array
    hand = msgpack.packb({"actions": {b"__ndarray__": True, b"data": a.tobytes(), b"dtype": "<f4", b"shape": (2, 2)},
                          "n": {b"__npgeneric__": True, b"data": 3, b"dtype": "<i8"}}, use_bin_type=True)
    out = wire.unpackb(hand)
    np.testing.assert_array_equal(out["actions"], a)
    assert out["n"] == 3 and out["n"].dtype == np.int64


@pytest.mark.parametrize("dtype", ["O", "c8", "V4"])
def test_refused_dtypes_are_never_sent(dtype):
    a = np.zeros(2, dtype=dtype)
    with pytest.raises(wire.WireError):
        wire.packb({"a": a})


@pytest.mark.parametrize("dtype", ["|O", "<c8", "|V4", "not-a-dtype"])
def test_refused_or_unknown_dtypes_are_rejected_on_receipt(dtype):
    frame = msgpack.packb({b"__ndarray__": True, b"data": b"\0" * 8, b"dtype": dtype, b"shape": [1]}, use_bin_type=True)
    with pytest.raises(wire.WireError):
        wire.unpackb(frame)


def test_malformed_frames_raise_wire_error():
    with pytest.raises(wire.WireError):
        wire.unpackb(b"\xc1\xc1")  # reserved msgpack byte
    with pytest.raises(wire.WireError):
        wire.unpackb("text frame")
    short = msgpack.packb({b"__ndarray__": True, b"data": b"\0" * 3, b"dtype": "<f4", b"shape": [2]}, use_bin_type=True)
    with pytest.raises(wire.WireError, match="do not fill"):
        wire.unpackb(short)


def test_arbitrary_objects_are_not_serialised():
    with pytest.raises(TypeError):
        wire.packb({"x": object()})
