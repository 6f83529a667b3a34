"""Zero-copy tensor export: NumPy, PyTorch and JAX views share the
simulator's memory, a view taken once sees every later step, and views keep
the simulator's memory alive after the env is closed or dropped."""

import gc
import sys

import numpy as np
import pytest

import orrery
from conftest import requires_jax, requires_torch


@pytest.fixture
def env():
    e = orrery.make("tag", num_worlds=6, device="cpu", seed=4, threads=1)
    yield e
    e.close()


def step_random(env, seed):
    rng = np.random.default_rng(seed)
    env.step(rng.integers(0, 5, size=(6, 4)).astype(np.int32))


def test_every_export_is_a_tensor(env):
    t = env.tensors
    for name in ("obs", "reward", "action", "terminated", "truncated", "errors", "position", "role"):
        assert isinstance(t[name], orrery.Tensor), name
    assert t["obs"].shape == (6, 4, 19) and t["obs"].dtype == "float32"
    assert t["terminated"].dtype == "bool" and t["terminated"].shape == (6,)
    assert t["action"].is_input and not t["obs"].is_input
    assert t["obs"].device == "cpu" and t["obs"].__dlpack_device__() == (1, 0)
    assert t["obs"].nbytes == 6 * 4 * 19 * 4
    assert "obs" in repr(t["obs"])


@pytest.mark.parametrize("name,options", [("tag", {}), ("overcooked", {"layout": "cramped_room"})])
def test_shapes_are_the_engines_user_shapes(name, options):
    # The shape rule lives in C++ (TensorView::user_shape); it must read as the export table says:
    # [worlds] + [rows unless per-world] + [dims unless a scalar component].
    e = orrery.make(name, num_worlds=3, device="cpu", autoreset="same_step", **options)
    try:
        exports = {x["name"]: x for x in e._sim.exports()}
        for tname, raw in e._sim.tensors().items():
            assert e.tensors[tname].shape == raw.user_shape, tname
            x = exports.get(tname[len("final_"):] if tname.startswith("final_") else tname)
            want = [3]
            if x is not None:
                want += [] if x["singleton"] else [x["capacity"]]
                want += [] if list(x["dims"]) == [1] else list(x["dims"])
            assert raw.user_shape == tuple(want), tname
    finally:
        e.close()


def test_numpy_from_dlpack_is_zero_copy_and_live(env):
    t = env.tensors["obs"]
    view = np.from_dlpack(t)
    assert view.ctypes.data == t.data_ptr
    assert view.shape == (6, 4, 19) and view.dtype == np.float32
    before = view.copy()
    step_random(env, 1)
    assert not np.array_equal(view, before)
    np.testing.assert_array_equal(view, env.obs)


def test_numpy_array_interface_is_zero_copy(env):
    arr = np.asarray(env.tensors["position"])
    assert arr.ctypes.data == env.tensors["position"].data_ptr
    step_random(env, 2)
    np.testing.assert_array_equal(arr, env.view("position"))


def test_bool_views_of_done_flags(env):
    term = np.from_dlpack(env.tensors["truncated"])
    assert term.dtype == np.bool_ and term.ctypes.data == env.tensors["truncated"].data_ptr


def test_legacy_and_versioned_capsules(env):
    t = env.tensors["reward"]
    legacy = t.__dlpack__()
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    versioned = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    old = t.__dlpack__(max_version=(0, 8))
    assert "versioned" not in repr(old)
    t.__dlpack__(stream=None, dl_device=(1, 0), copy=False)
    with pytest.raises(BufferError, match="copy=True is not supported"):
        t.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="lives on cpu"):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(AttributeError):
        t.__cuda_array_interface__


def test_views_keep_memory_alive_after_close_and_delete():
    env = orrery.make("tag", num_worlds=3, device="cpu", seed=1)
    obs = np.from_dlpack(env.tensors["obs"])
    arr = np.asarray(env.tensors["obs"])
    expected = obs.copy()
    env.close()
    del env
    gc.collect()
    np.testing.assert_array_equal(obs, expected)
    np.testing.assert_array_equal(arr, expected)
    # the memory is still writable and owned: touch every byte
    obs += 1.0
    np.testing.assert_array_equal(arr, expected + 1.0)


def test_capsules_release_their_reference():
    env = orrery.make("tag", num_worlds=2, device="cpu")
    t = env.tensors["obs"]
    base = sys.getrefcount(t)
    held = [t.__dlpack__() for _ in range(10)]
    assert sys.getrefcount(t) == base + 10  # each capsule keeps its producer alive
    del held  # dropped without a consumer: the capsule destructor lets go
    assert sys.getrefcount(t) == base
    consumed = [np.from_dlpack(t) for _ in range(10)]
    assert sys.getrefcount(t) > base
    del consumed  # the consumer called the deleter
    assert sys.getrefcount(t) == base


def test_view_reshapes_without_copying(env):
    t = env.tensors["obs"]
    flat = t.view("float32", [6 * 4, 19])
    assert flat.data_ptr == t.data_ptr and flat.shape == (24, 19)
    with pytest.raises(ValueError, match="covers .* bytes; expected"):
        t.view("float32", [5, 19])
    with pytest.raises(TypeError, match="cannot be viewed as int32"):
        t.view("int32", [6, 4, 19])


@requires_torch
def test_torch_from_dlpack_is_zero_copy_and_live(env):
    import torch

    obs = torch.from_dlpack(env.tensors["obs"])
    assert obs.data_ptr() == env.tensors["obs"].data_ptr
    before = obs.clone()
    step_random(env, 3)
    assert not torch.equal(obs, before)
    term = torch.from_dlpack(env.tensors["terminated"])
    assert term.dtype == torch.bool


@requires_torch
def test_torch_framework_returns_the_same_tensors_each_step():
    import torch

    env = orrery.make("tag", num_worlds=2, device="cpu", framework="torch", seed=0)
    obs, _ = env.reset()
    acts = torch.randint(0, 5, (2, 4))
    obs2, reward, term, trunc, info = env.step(acts)
    assert obs2 is obs and isinstance(reward, torch.Tensor) and term.dtype == torch.bool
    assert obs.data_ptr() == env.tensors["obs"].data_ptr
    env.actions.copy_(torch.zeros(2, 4, dtype=torch.int32))  # write in place through torch
    env.step()
    assert torch.all(env.actions == 0)


@requires_jax
def test_jax_from_dlpack_is_zero_copy():
    import jax

    env = orrery.make("tag", num_worlds=6, device="cpu", seed=4, framework="jax")
    arr = jax.dlpack.from_dlpack(env.tensors["obs"])
    assert arr.unsafe_buffer_pointer() == env.tensors["obs"].data_ptr
    step_random(env, 5)
    obs, reward, term, trunc, info = env.step(np.zeros((6, 4), np.int32))
    assert obs.unsafe_buffer_pointer() == env.tensors["obs"].data_ptr
    np.testing.assert_array_equal(np.asarray(obs), np.from_dlpack(env.tensors["obs"]))
    # Every output step() returns is a view (bool flags too), as docs/python.md says.
    for name, arr in {"reward": reward, "terminated": term, "truncated": trunc, **info}.items():
        assert arr.unsafe_buffer_pointer() == env.tensors[name].data_ptr, name
    assert term.dtype == np.bool_ and set(info) == {"position", "role"}


@requires_jax
def test_jax_actions_on_the_cpu_take_the_host_fast_path(monkeypatch):
    """A JAX array on the CPU is read through NumPy's view of its buffer by the
    binding's step_host (range-checked there, copied in: no Python-side checks
    or copies); a bad value still raises the message naming it."""
    import jax.numpy as jnp

    env = orrery.make("tag", num_worlds=6, device="cpu", seed=4, framework="jax", horizon=5)
    twin = orrery.make("tag", num_worlds=6, device="cpu", seed=4, horizon=5)

    def slow(*args, **kwargs):
        raise AssertionError("write_input ran: the fast path was not taken")

    monkeypatch.setattr("orrery.env.write_input", slow)
    actions = np.random.default_rng(5).integers(0, 5, size=(9, 6, 4)).astype(np.int32)
    for a in actions:
        env.step(jnp.asarray(a))
        twin.step(a)
    assert [env.state_hash(w) for w in range(6)] == [twin.state_hash(w) for w in range(6)]
    monkeypatch.undo()
    bad = actions[0].copy()
    bad[3, 1] = 9
    with pytest.raises(ValueError, match=r"actions\[3, 1\] = 9 is out of range"):
        env.step(jnp.asarray(bad))
    assert [env.state_hash(w) for w in range(6)] == [twin.state_hash(w) for w in range(6)]


def test_dlpack_framework_returns_tensors():
    env = orrery.make("tag", num_worlds=2, device="cpu", framework="dlpack")
    obs, reward, term, trunc, info = env.step(np.zeros((2, 4), np.int32))
    assert isinstance(obs, orrery.Tensor) and isinstance(term, orrery.Tensor)


def test_step_fast_and_general_paths_agree():
    """A C-order array of the action's dtype goes through the binding in one call;
    other dtypes, strided arrays and lists take the general path; both step alike
    and step() hands back the same views every call, with a fresh info dict."""
    fast = orrery.make("overcooked", num_worlds=16, device="cpu", seed=4, threads=1, layout="cramped_room")
    slow = orrery.make("overcooked", num_worlds=16, device="cpu", seed=4, threads=1, layout="cramped_room")
    rng = np.random.default_rng(2)
    lo, hi = fast.action_range
    first = fast.step(fast.actions.copy())
    slow.step(slow.actions.copy())
    for k in range(40):
        acts = rng.integers(lo, hi, size=(2, 16), endpoint=True).astype(np.int32)
        out = fast.step(np.ascontiguousarray(acts.T))
        if k % 3 == 0:
            slow.step(acts.T)  # strided
        elif k % 3 == 1:
            slow.step(acts.T.astype(np.int64))
        else:
            slow.actions[...] = acts.T
            slow.step()
        for a, b in zip(out[:4], first[:4]):
            assert a is b
        assert out[4] is not first[4] and out[4].keys() == first[4].keys()
        np.testing.assert_array_equal(fast.obs, slow.obs)
        np.testing.assert_array_equal(fast.view("reward"), slow.view("reward"))
    assert [fast.state_hash(w) for w in range(16)] == [slow.state_hash(w) for w in range(16)]


def test_binding_step_paths_on_the_cpu():
    """step_host writes nothing and returns False for anything but an in-range
    C-order array of the input's dtype and size; a stream is ignored on the CPU;
    the device path says it needs CUDA; engine_loop times orrery bench's loop,
    copying each set in or reading it in place, which steps alike."""
    env = orrery.make("tag", num_worlds=4, device="cpu", seed=1, threads=1)
    sim = env._sim
    before = env.actions.copy()
    good = np.full((4, 4), 2, np.int32)
    for bad in (good.astype(np.int64), np.asfortranarray(np.arange(16, dtype=np.int32).reshape(4, 4) % 5),
                good[:2], np.full((4, 4), 5, np.int32), np.full((4, 4), -1, np.int32), good.astype(">i4")):
        assert sim.step_host("action", bad) is False
        np.testing.assert_array_equal(env.actions, before)
    hashes = [env.state_hash(w) for w in range(4)]
    assert sim.step_host("action", good) is True
    np.testing.assert_array_equal(env.actions, good)
    assert [env.state_hash(w) for w in range(4)] != hashes
    sim.step(0)  # a caller stream means nothing on the CPU
    with pytest.raises(ValueError, match="needs a CUDA simulator"):
        sim.step_reading(0, "action", good.ctypes.data)
    pool = np.stack([np.full((4, 4), k % 5, np.int32) for k in range(3)])
    wall, cpu = sim.engine_loop("action", pool.ctypes.data, 3, 10)
    assert wall > 0 and cpu > 0
    np.testing.assert_array_equal(env.actions, pool[(10 - 1) % 3])  # the last timed step's set
    twin = orrery.make("tag", num_worlds=4, device="cpu", seed=1, threads=1)
    twin._sim.step_host("action", good)
    twin._sim.step(0)
    twin._sim.engine_loop("action", pool.ctypes.data, 3, 10)
    wall, cpu = sim.engine_loop("action", pool.ctypes.data, 3, 7, in_place=True)  # each step reads its set
    twin._sim.engine_loop("action", pool.ctypes.data, 3, 7)
    assert wall > 0 and cpu > 0
    np.testing.assert_array_equal(env.actions, pool[(7 - 1) % 3])
    assert [env.state_hash(w) for w in range(4)] == [twin.state_hash(w) for w in range(4)]
    wall, cpu = orrery._core.engine_step_seconds("tag", {}, 4, "cpu", 1, 10)
    assert wall > 0 and cpu > 0
