"""The CUDA path (skipped without a GPU): zero-copy device views through
DLPack and __cuda_array_interface__, actions from torch/JAX on the device,
device-side range errors, agreement with the CPU backend, and a step
captured in a torch CUDA graph."""

import numpy as np
import pytest

import orrery
from conftest import ENVS, random_actions, requires_cuda

pytestmark = requires_cuda


def gpu(name="tag", n=64, **kw):
    return orrery.make(name, num_worlds=n, device="cuda", seed=5, **kw)


def test_device_views_are_zero_copy_and_live():
    import torch

    env = gpu()
    assert env.device == "cuda:0" and env.framework == "torch"
    t = env.tensors["obs"]
    assert t.__dlpack_device__() == (2, 0)
    cai = t.__cuda_array_interface__
    assert cai["data"][0] == t.data_ptr and cai["shape"] == t.shape and cai["typestr"] == "<f4"
    with pytest.raises(AttributeError):
        t.__array_interface__
    view = torch.from_dlpack(t)
    assert view.is_cuda and view.data_ptr() == t.data_ptr
    before = view.clone()
    obs, reward, term, trunc, info = env.step(torch.randint(0, 5, (64, 4), device="cuda"))
    assert obs.data_ptr() == t.data_ptr and term.dtype == torch.bool and term.is_cuda
    assert not torch.equal(view, before)
    torch.testing.assert_close(view, obs)


@pytest.mark.parametrize("name", ENVS)
def test_gpu_matches_cpu(name):
    import torch

    options = {"start": "random"} if name == "overcooked" else {}
    a = orrery.make(name, num_worlds=32, device="cuda", seed=9, **options)
    b = orrery.make(name, num_worlds=32, device="cpu", seed=9, **options)
    rng = np.random.default_rng(0)
    for _ in range(50):
        acts = random_actions(b, rng)
        oa, ra, ta, ua, _ = a.step(torch.as_tensor(acts, device="cuda"))
        ob, rb, tb, ub, _ = b.step(acts)
        np.testing.assert_array_equal(ta.cpu().numpy(), tb)
        np.testing.assert_array_equal(ua.cpu().numpy(), ub)
        np.testing.assert_allclose(oa.cpu().numpy(), ob, rtol=0, atol=1e-5)
        np.testing.assert_allclose(ra.cpu().numpy(), rb, rtol=0, atol=1e-5)


def test_device_actions_are_checked_without_host_sync():
    import torch

    env = gpu(n=4)
    with pytest.raises(ValueError, match="actions is on cpu; expected an array on cuda:0"):
        env.step(np.zeros((4, 4), np.int32))
    with pytest.raises(ValueError, match="shape \\(4, 3\\)"):
        env.step(torch.zeros((4, 3), dtype=torch.int32, device="cuda"))
    with pytest.raises(TypeError, match="dtype torch.float32"):
        env.step(torch.zeros((4, 4), device="cuda"))
    bad = torch.zeros((4, 4), dtype=torch.int32, device="cuda")
    bad[2, 1] = 17  # out of range: the device records kBadAction and world 2 does not step
    env.step(bad)
    errors = env.errors()
    assert errors[2] == 3 and errors[0] == 0
    with pytest.raises(ValueError, match="world 2: code 3"):
        env.check_errors()


def test_jax_views_on_the_gpu():
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX has no GPU here")
    import jax.numpy as jnp

    env = gpu(framework="jax")
    obs, reward, term, trunc, info = env.step(jnp.ones((64, 4), dtype=jnp.int32))
    assert obs.unsafe_buffer_pointer() == env.tensors["obs"].data_ptr


@pytest.mark.parametrize("autoreset", ["next_step", "same_step"])
def test_step_captured_in_a_cuda_graph(autoreset):
    import torch

    name = "overcooked" if "overcooked" in ENVS else "tag"
    env, twin = gpu(name, 256, autoreset=autoreset), gpu(name, 256, autoreset=autoreset)
    lo, hi = env.action_range
    shape = env.tensors["action"].shape
    acts = torch.zeros(shape, dtype=torch.int64, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up: views made, nothing left to initialise
        for _ in range(3):
            env.step(acts)
            twin.step(acts)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = env.step(acts)
    gen = torch.Generator(device="cuda").manual_seed(0)
    for _ in range(40):
        acts.copy_(torch.randint(lo, hi + 1, shape, device="cuda", generator=gen))
        graph.replay()
        ref = twin.step(acts)
        torch.testing.assert_close(out[0], ref[0])  # obs
        torch.testing.assert_close(out[1], ref[1])  # reward
        assert torch.equal(out[3], ref[3])
    torch.cuda.synchronize()
    assert [env.state_hash(w) for w in range(8)] == [twin.state_hash(w) for w in range(8)]


# int32: read in place by the step; int64: torch's cast (write_input). "side": torch's
# usual capture on a side stream, ordered against the engine's stream by events;
# "env": everything on env.stream, the engine's own (eager twin likewise).
@pytest.mark.parametrize("dtype, where", [("int32", "side"), ("int64", "side"), ("int32", "env")])
def test_rollout_with_a_policy_captured_in_one_cuda_graph(dtype, where):
    """T steps of a tiny torch policy and env.step, captured in one graph and
    replayed, give bit for bit what the same loop gives eagerly on a twin."""
    import torch

    name = "overcooked" if "overcooked" in ENVS else "tag"
    T = 16
    env, twin = gpu(name, 256), gpu(name, 256)
    lo, hi = env.action_range
    features = env.obs[0, 0].numel()
    gen = torch.Generator(device="cuda").manual_seed(0)
    weights = torch.randn(hi - lo + 1, features, device="cuda", generator=gen)
    kind = getattr(torch, dtype)

    def buffers(e):
        return {"obs": torch.empty((T,) + tuple(e.obs.shape), dtype=e.obs.dtype, device="cuda"),
                "reward": torch.empty((T,) + tuple(e.view("reward").shape), device="cuda"),
                "done": torch.empty((T,) + tuple(e.view("terminated").shape), dtype=torch.bool, device="cuda"),
                "action": torch.empty((T,) + tuple(e.actions.shape), dtype=kind, device="cuda")}

    def rollout(e, buf):
        obs = e.obs
        for k in range(T):
            # Elementwise products and sums: the same kernels in a graph as
            # eagerly. The grid's static layers dominate an argmax (every world
            # would pick one action), so the action is the score's total
            # folded into the range: it moves whenever a chef or item does.
            score = (obs.flatten(2).float().unsqueeze(2) * weights).sum(-1)
            actions = ((score.sum(-1) * 1000).long().remainder(hi - lo + 1) + lo).to(kind)
            obs, reward, term, trunc, _ = e.step(actions)
            buf["action"][k].copy_(actions)
            buf["obs"][k].copy_(obs)
            buf["reward"][k].copy_(reward)
            buf["done"][k].copy_(term | trunc)

    graphed, eager = buffers(env), buffers(twin)
    side = env.stream if where == "env" else torch.cuda.Stream()
    twin_stream = twin.stream if where == "env" else torch.cuda.current_stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # torch's warm-up before capture, on both envs alike
        rollout(env, graphed)
        rollout(twin, eager)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=env.stream if where == "env" else None):
        rollout(env, graphed)
    for _ in range(3):
        graph.replay()
        twin_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(twin_stream):
            rollout(twin, eager)
        torch.cuda.current_stream().wait_stream(twin_stream)
        for key in graphed:
            assert torch.equal(graphed[key], eager[key]), key
    assert len(torch.unique(graphed["action"])) > 1  # the policy acts, not a constant
    torch.cuda.synchronize()
    assert not env.errors().any()
    assert [env.state_hash(w) for w in range(16)] == [twin.state_hash(w) for w in range(16)]


def test_step_fast_path_stays_on_the_device_and_checks_its_input():
    """env.step(t) with t of the action's exact dtype and shape is read in place
    by the step; other dtypes or layouts go through torch; bad ones still raise."""
    import torch

    env, twin = gpu("tag", 8), gpu("tag", 8)
    gen = torch.Generator(device="cuda").manual_seed(1)
    for _ in range(20):
        acts = torch.randint(0, 5, (4, 8), device="cuda", generator=gen, dtype=torch.int32)
        env.step(acts.t())  # non-contiguous: torch's copy
        twin.step(acts.t().contiguous())  # read in place by the step
        assert torch.equal(env.obs, twin.obs)
    twin.actions.copy_(acts.t())
    twin.step(twin.actions)  # the action tensor itself: no copy at all
    env.step(acts.t().to(torch.int64))
    assert torch.equal(env.obs, twin.obs)
    with pytest.raises(ValueError, match="shape"):
        env.step(torch.zeros((8, 3), dtype=torch.int32, device="cuda"))
    with pytest.raises(TypeError, match="dtype"):
        env.step(torch.zeros((8, 4), dtype=torch.float32, device="cuda"))
    with pytest.raises(ValueError, match="is on cpu"):
        env.step(torch.zeros((8, 4), dtype=torch.int32))
    env.step(torch.full((8, 4), 9, dtype=torch.int32, device="cuda"))  # out of range: recorded on the device
    assert (env.errors() == 3).all()


def test_step_reads_the_callers_tensor_in_place_in_stream_order():
    """env.step(t), t contiguous of the action's dtype on this device, is read
    by the step where it is (no copy): writes to t queued on torch's stream
    after step() returns do not reach that step, the action tensor holds the
    values the step read, and a tensor that is not 16-byte aligned (copied
    first) steps alike."""
    import torch

    env, twin, odd = gpu("tag", 64), gpu("tag", 64), gpu("tag", 64)
    gen = torch.Generator(device="cuda").manual_seed(2)
    backing = torch.zeros(64 * 4 + 1, dtype=torch.int32, device="cuda")
    unaligned = backing[1:].view(64, 4)  # contiguous, 4 bytes past an aligned address
    assert unaligned.is_contiguous() and unaligned.data_ptr() % 16 == 4
    acts = torch.empty((64, 4), dtype=torch.int32, device="cuda")
    for _ in range(30):
        acts.copy_(torch.randint(0, 5, (64, 4), device="cuda", generator=gen, dtype=torch.int32))
        kept = acts.clone()
        unaligned.copy_(acts)
        env.step(acts)
        odd.step(unaligned)
        acts.fill_(4)  # queued after the step on the same stream: the step has read kept's values
        unaligned.fill_(4)
        twin.step(kept)
        assert torch.equal(env.actions, kept)
        assert torch.equal(env.obs, twin.obs) and torch.equal(odd.obs, twin.obs)
    torch.cuda.synchronize()
    assert [env.state_hash(w) for w in range(8)] == [twin.state_hash(w) for w in range(8)]
    assert [odd.state_hash(w) for w in range(8)] == [twin.state_hash(w) for w in range(8)]
    acts.copy_(kept)
    acts[5, 2] = 7  # out of range, read in place: world 5 records kBadAction and does not step
    env.step(acts)
    twin.step(kept)
    errors = env.errors()
    assert errors[5] == 3 and (np.delete(errors, 5) == 0).all()
    assert env.state_hash(5) != twin.state_hash(5) and env.state_hash(4) == twin.state_hash(4)


@pytest.mark.parametrize("follow", ["1", "0"])
def test_steps_on_changing_torch_streams_stay_ordered(follow, monkeypatch):
    """The engine follows torch's current stream (moving with one event) or,
    with ORRERY_CUDA_FOLLOW=0, orders each call with two events: either way a
    step reads the actions a slow torch kernel wrote just before it, and the
    observations it returns are read after it, across the default stream, a
    side stream and env.stream, as a twin stepped on the default stream alone."""
    import torch

    monkeypatch.setenv("ORRERY_CUDA_FOLLOW", follow)
    env = gpu("tag", 256)
    monkeypatch.delenv("ORRERY_CUDA_FOLLOW")
    twin = gpu("tag", 256)
    side = torch.cuda.Stream()
    big = torch.randn(2048, 2048, device="cuda")
    gen = torch.Generator(device="cuda").manual_seed(3)
    for k in range(24):
        stream = (torch.cuda.current_stream(), side, env.stream)[k % 3]
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            slow = (big @ big).sum()  # queued ahead of the actions: a step that ran early would read stale ones
            acts = (torch.randint(0, 5, (256, 4), device="cuda", generator=gen, dtype=torch.int32)
                    + (slow * 0).to(torch.int32))
            obs = env.step(acts)[0].clone()  # read after the step, on the same stream
        torch.cuda.current_stream().wait_stream(stream)
        twin.step(acts)
        assert torch.equal(obs, twin.obs), k
    torch.cuda.synchronize()
    assert [env.state_hash(w) for w in range(8)] == [twin.state_hash(w) for w in range(8)]


def _jax_cuda():
    jax = pytest.importorskip("jax")
    try:
        if jax.devices("cuda"):
            return jax
    except RuntimeError:
        pass
    pytest.skip("this jax has no CUDA backend")


def _jax_twin_setup(name, rng_seed):
    """make() options of a 6-world env and its CPU twin, the action range and
    shape, and 12 steps of random actions."""
    kw = dict(num_worlds=6, seed=11, horizon=5)
    if name == "overcooked":
        kw["layout"] = "cramped_room"
    hi = 5 if name == "tag" else 6
    shape = (6, 4) if name == "tag" else (6, 2)
    actions = np.random.default_rng(rng_seed).integers(0, hi, size=(12,) + shape).astype(np.int32)
    return kw, hi, shape, actions


@pytest.mark.parametrize("name", ["tag", "overcooked"])
def test_jax_eager_step_on_cuda_is_zero_copy(name, monkeypatch):
    """env.step with a JAX array on a CUDA env (framework="jax"): the step reads
    the actions where XLA holds them (one custom call on XLA's stream, after the
    XLA computation that made them: no torch, no copy), and returns JAX arrays
    that are the simulator's own tensors (same device pointers), made without a
    host wait (the views' streams wait for the step by an event). Every step
    matches eager steps of a CPU twin; a bad value is recorded per world."""
    jax = _jax_cuda()
    import jax.numpy as jnp

    kw, hi, shape, actions = _jax_twin_setup(name, rng_seed=1)
    cpu = orrery.make(name, device="cpu", threads=1, **kw)
    env = orrery.make(name, device="cuda", framework="jax", **kw)

    def copied(*args, **kwargs):
        raise AssertionError("write_input ran: the actions were copied, not read in place")

    monkeypatch.setattr("orrery.env.write_input", copied)
    gpu0 = jax.devices("cuda")[0]
    stacked = jax.device_put(jnp.asarray(actions), gpu0)
    outputs = ("obs", "reward", "terminated", "truncated")
    for k in range(len(actions)):
        a = (stacked[k] + hi) % hi  # computed by XLA just before the step, which must follow it
        got = env.step(a)
        step = env._views["_jax_in_place"]
        assert step._stepper.calls == k + 1  # every step through the in-place custom call
        expected = cpu.step(actions[k])
        for i, name_ in enumerate(outputs):
            assert got[i].unsafe_buffer_pointer() == env.tensors[name_].data_ptr, name_
            np.testing.assert_array_equal(np.asarray(got[i]), np.array(expected[i]), err_msg=f"{name_}, step {k}")
        for key, value in got[4].items():
            assert value.unsafe_buffer_pointer() == env.tensors[key].data_ptr, key
    for w in range(6):
        assert env.state_hash(w) == cpu.state_hash(w)
    bad = actions[0].copy()
    bad[2, 1] = 17  # out of range: the device records kBadAction and world 2 does not step
    env.step(jax.device_put(jnp.asarray(bad), gpu0))
    errors = env.errors()
    assert errors[2] == 3 and errors[0] == 0
    env.close()
    cpu.close()


@pytest.mark.parametrize("name", ["tag", "overcooked"])
def test_jax_ffi_step_on_cuda_matches_eager_cpu_steps(name):
    """orrery.jax.make_step on a CUDA env: one XLA custom call per step on XLA's
    stream inside jit + scan, the same bytes as eager steps of a CPU twin."""
    jax = _jax_cuda()
    import jax.numpy as jnp
    from orrery.jax import FFI_TARGET_CUDA, make_step

    kw, _, shape, actions = _jax_twin_setup(name, rng_seed=0)
    cpu = orrery.make(name, device="cpu", threads=1, **kw)
    expected = [tuple(np.array(x) for x in cpu.step(a)[:4]) for a in actions]

    env = orrery.make(name, device="cuda", framework="jax", **kw)
    step = make_step(env)
    hlo = jax.jit(step).lower(jnp.zeros(shape, jnp.int32)).as_text()
    assert FFI_TARGET_CUDA in hlo and "callback" not in hlo.lower()

    @jax.jit
    def rollout(acts):
        return jax.lax.scan(lambda c, a: (c, step(a)), 0, acts)[1]

    obs, reward, term, trunc = rollout(jax.device_put(jnp.asarray(actions), jax.devices("cuda")[0]))
    assert obs.devices() == {jax.devices("cuda")[0]}
    for k, (o, r, t, tr) in enumerate(expected):
        np.testing.assert_array_equal(np.asarray(obs[k]), o)
        np.testing.assert_array_equal(np.asarray(reward[k]), r)
        np.testing.assert_array_equal(np.asarray(term[k]), t)
        np.testing.assert_array_equal(np.asarray(trunc[k]), tr)
    assert np.asarray(trunc).any()
    for w in range(6):
        assert env.state_hash(w) == cpu.state_hash(w)
    env.close()
    cpu.close()
