"""Official ``.pruned_init`` files are loaded without executing their pickle.

``suite.params.assets_dir`` lets a user point the official provider at any
folder, so an init-state file is untrusted input: it must load with
``torch.load(weights_only=True)`` and anything but a plain float64 array is
refused in one line. No simulator is needed."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch: the `models` extra")

from envs.libero.provider import ProviderError, load_pickled_init_states  # noqa: E402


def test_an_official_style_file_loads_exactly(tmp_path):
    """LIBERO writes its init files with ``torch.save`` of a numpy array (read back by
    ``torch.load`` in libero/libero/benchmark/__init__.py ``get_task_init_states``)."""
    states = np.random.default_rng(0).normal(size=(50, 79))
    path = tmp_path / "task.pruned_init"
    torch.save(states, path)
    np.testing.assert_array_equal(load_pickled_init_states(str(path)), states)


def test_a_numpy_1_pickle_loads_too(tmp_path):
    """The published files were pickled under numpy 1 (``numpy.core.multiarray._reconstruct``)."""
    states = np.arange(12, dtype=np.float64).reshape(3, 4)
    buf = io.BytesIO()
    torch.save(states, buf, _use_new_zipfile_serialization=False)
    raw = buf.getvalue()
    assert b"numpy._core.multiarray" in raw or b"numpy.core.multiarray" in raw
    path = tmp_path / "old.pruned_init"
    path.write_bytes(raw.replace(b"numpy._core.multiarray", b"numpy.core.multiarray"))
    np.testing.assert_array_equal(load_pickled_init_states(str(path)), states)


class _Payload:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_a_file_that_would_run_code_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pruned_init"
    torch.save(_Payload(str(marker)), path)
    with pytest.raises(ProviderError, match="refused to unpickle") as exc:
        load_pickled_init_states(str(path))
    assert "\n" not in str(exc.value)
    assert not marker.exists()


def test_anything_but_a_2d_float64_array_is_refused(tmp_path):
    path = tmp_path / "dict.pruned_init"
    torch.save({"states": [1, 2]}, path)
    with pytest.raises(ProviderError, match=r"expected a \(N, D\) float64 array"):
        load_pickled_init_states(str(path))
