"""Orrery where RL users already are: Gymnasium ids, what an env declares
(reward semantics, action and observation names, spaces), the agents-as-rows
adapter, friendly edges (missing extras, the CPU fallback notice, per-world
seed lists, single-agent PettingZoo), rendering and Stable-Baselines3."""

import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import orrery
from orrery import env as orrery_env

gym = pytest.importorskip("gymnasium")

HAS_OVERCOOKED = "overcooked" in orrery.list_envs()
needs_overcooked = pytest.mark.skipif(not HAS_OVERCOOKED, reason="Overcooked is not registered")


# ----- item 3: registered ids, spaces and names on orrery.Env ---------------

@needs_overcooked
def test_gymnasium_make_and_make_vec_by_registered_id():
    from orrery.gymnasium import OrreryEnv, OrreryVectorEnv

    env = gym.make("orrery/overcooked-v0", layout="cramped_room")
    assert isinstance(env.unwrapped, OrreryEnv)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (2, 26, 4, 5)
    env.close()
    vec = gym.make_vec("orrery/overcooked-v0", num_envs=64, layout="cramped_room")
    assert isinstance(vec, OrreryVectorEnv) and vec.num_envs == 64
    obs, _ = vec.reset(seed=0)
    obs, rew, term, trunc, _ = vec.step(vec.action_space.sample())
    assert obs.shape == (64, 2, 26, 4, 5) and rew.shape == (64,)
    vec.close()


def test_per_agent_env_make_vec_gives_one_row_per_agent():
    from orrery.puffer import OrreryAgentsVectorEnv

    vec = gym.make_vec("orrery/tag-v0", num_envs=8, seed=0)  # 2 worlds x 4 agents
    assert isinstance(vec, OrreryAgentsVectorEnv) and vec.num_envs == 8 and vec.num_worlds == 2
    with pytest.raises(ValueError, match="num_envs=6 is not a multiple of 'tag''s 4 agents"):
        gym.make_vec("orrery/tag-v0", num_envs=6)
    vec.close()


def test_ids_are_versioned_for_every_env():
    for name in orrery.list_envs():
        assert gym.spec(f"orrery/{name}-v0").vector_entry_point is not None


@needs_overcooked
def test_env_exposes_spaces_action_meanings_and_channel_names():
    env = orrery.make("overcooked", num_worlds=3, device="cpu", layout="cramped_room", threads=1)
    assert env.action_meanings == ("north", "south", "east", "west", "stay", "interact")
    assert len(env.obs_names) == 26 and env.obs_names[0] == "player_0_loc" and env.obs_names[-1] == "urgency"
    assert env.single_observation_space.shape == (2, 26, 4, 5)
    assert env.agent_observation_space.shape == (26, 4, 5)
    assert env.agent_action_space == gym.spaces.Discrete(6)
    assert env.observation_space.shape == (3, 2, 26, 4, 5)
    assert env.action_space.shape == (3, 2)
    assert env.action_space.contains(env.sample_actions(seed=1).astype(np.int64))
    env.close()


def test_tag_names_follow_the_number_of_agents():
    env = orrery.make("tag", num_worlds=1, device="cpu", pursuers=1, evaders=2, threads=1)
    assert env.obs_names[:7] == ("role", "x", "y", "vx", "vy", "pellet_dx", "pellet_dy")
    assert len(env.obs_names) == env.obs.shape[-1] == 7 + 4 * 2
    assert env.action_meanings[env.action_range[0]] == "noop"
    env.close()


# ----- item 4: reward semantics ---------------------------------------------

def test_reward_modes_are_declared():
    assert orrery.make("tag", device="cpu", threads=1).reward_mode == "per_agent"
    if HAS_OVERCOOKED:
        assert orrery.make("overcooked", device="cpu", threads=1).reward_mode == "team"


@needs_overcooked
def test_gymnasium_reward_is_20_per_soup_as_overcooked_ai():
    from test_overcooked import soup_script
    from orrery.gymnasium import OrreryVectorEnv

    vec = OrreryVectorEnv("overcooked", 1, seed=0, threads=1, layout="cramped_room")
    vec.reset(seed=0)
    total, sparse = 0.0, 0.0
    for a, b in soup_script():
        _, rew, _, _, info = vec.step(np.array([[a, b]]))
        total += float(rew[0])
        sparse += float(info["sparse_r_by_agent"].sum())
    assert total == 20.0 == sparse  # overcooked_ai's sparse reward for one soup
    vec.close()


def test_gymnasium_refuses_to_mix_per_agent_rewards():
    from orrery.gymnasium import OrreryEnv, OrreryVectorEnv

    for make in (lambda: OrreryVectorEnv("tag", 2), lambda: OrreryEnv("tag")):
        with pytest.raises(ValueError, match="rewards each of its 4 agents separately.*OrreryAgentsVectorEnv"):
            make()


def test_agents_as_rows_keep_each_agents_reward():
    from orrery.puffer import OrreryAgentsVectorEnv

    vec = OrreryAgentsVectorEnv("tag", num_worlds=3, seed=4, threads=1, horizon=400)
    core = orrery.make("tag", num_worlds=3, device="cpu", seed=4, threads=1, horizon=400)
    obs, _ = vec.reset(seed=4)
    core.reset(seed=4)
    assert obs.shape == (12, 19) and vec.single_action_space == gym.spaces.Discrete(5)
    rng = np.random.default_rng(0)
    agents_differ = False
    for _ in range(300):
        a = rng.integers(0, 5, size=12)
        o1, r1, t1, tr1, _ = vec.step(a)
        o2, r2, t2, tr2, _ = core.step(a.reshape(3, 4))
        np.testing.assert_array_equal(o1, o2.reshape(12, 19))
        np.testing.assert_array_equal(r1, r2.reshape(12))
        np.testing.assert_array_equal(tr1, np.repeat(tr2, 4))
        agents_differ |= bool((r1.reshape(3, 4).max(1) != r1.reshape(3, 4).min(1)).any())
    assert agents_differ  # one agent's tag or pellet is its own reward, not summed into a world's
    vec.close()
    core.close()


# ----- item 7: friendly edges ------------------------------------------------

def test_missing_extra_says_what_to_pip_install(monkeypatch):
    from orrery import _extras

    monkeypatch.setitem(sys.modules, "stable_baselines3", None)  # import fails as if not installed
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'orrery-rl\[sb3\]'"):
        _extras.require("stable_baselines3", "orrery.sb3")
    monkeypatch.delitem(sys.modules, "orrery.sb3", raising=False)
    with pytest.raises(ModuleNotFoundError, match=r"orrery.sb3 needs the package 'stable_baselines3'"):
        import orrery.sb3  # noqa: F401


def test_cpu_fallback_is_one_python_warning(monkeypatch, capfd):
    monkeypatch.setattr(orrery_env, "_fallback_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = orrery.make("tag", num_worlds=2, device="auto", threads=1)
        b = orrery.make("tag", num_worlds=2, device="auto", threads=1)
    if a.device != "cpu":
        pytest.skip("CUDA is usable here: no fallback")
    fallbacks = [w for w in caught if issubclass(w.category, orrery.CpuFallbackWarning)]
    assert len(fallbacks) == 1 and "runs on the CPU" in str(fallbacks[0].message)
    assert "device='auto'" not in capfd.readouterr().err  # nothing written by C++
    a.close()
    b.close()


def test_reset_accepts_a_seed_per_world():
    env = orrery.make("tag", num_worlds=3, device="cpu", threads=1)
    first = env.reset(seed=[5, 6, 7])[0].copy()
    np.testing.assert_array_equal(first, env.reset(seed=5)[0])  # Gymnasium's [s, s+1, ...] is seed s
    other = env.reset(seed=[9, 1, 4])[0].copy()
    np.testing.assert_array_equal(other, env.reset(seed=[9, 1, 4])[0])
    assert not np.array_equal(other, first)
    with pytest.raises(ValueError, match="seed is a list of 2 values; expected one per world \\(3\\)"):
        env.reset(seed=[1, 2])
    with pytest.raises(TypeError, match="seed\\[1\\]='x' has type str; expected an int"):
        env.reset(seed=[1, "x", 3])
    env.close()


def test_vector_env_reset_accepts_a_seed_list():
    from orrery.puffer import OrreryAgentsVectorEnv

    vec = OrreryAgentsVectorEnv("tag", num_worlds=2, threads=1)
    obs, _ = vec.reset(seed=list(range(3, 11)))
    np.testing.assert_array_equal(obs, vec.reset(seed=3)[0])
    vec.close()


def test_pettingzoo_handles_a_single_agent_env(monkeypatch):
    pytest.importorskip("pettingzoo")
    from orrery import pettingzoo as pz

    real = orrery.make

    def make_single(name, **kw):
        # What a single-agent env exports: per-world (singleton) obs, action and
        # reward, without an agent axis. Made here by folding tag's two agent
        # rows into one agent with a 22-float observation and a 2-part action.
        env = real("tag", pursuers=1, evaders=1, **kw)
        env.name = name  # an env orrery.meta does not list
        for key in ("obs", "action", "reward"):
            t = env.tensors[key]
            size = int(np.prod(t.shape[1:]))
            env._exports[key] = dict(env._exports[key], singleton=True, capacity=1, dims=[size])
            env.tensors[key] = t.view(t.dtype, [env.num_worlds, size])
        env._views.clear()
        env._host.clear()
        return env

    monkeypatch.setattr(pz.orrery, "make", make_single)
    env = pz.OrreryParallelEnv("single")
    assert env.possible_agents == ["agent_0"]
    obs, infos = env.reset(seed=0)
    assert obs["agent_0"].shape == env.observation_space("agent_0").shape
    assert env.action_space("agent_0") == gym.spaces.MultiDiscrete([5, 5])
    obs, rew, term, trunc, infos = env.step({"agent_0": np.array([1, 4])})
    np.testing.assert_array_equal(env.env.actions[0], [1, 4])
    assert set(rew) == {"agent_0"} and isinstance(rew["agent_0"], float)
    env.close()


def test_ppo_example_threads_fit_the_cores():
    import importlib.util
    import pathlib

    pytest.importorskip("torch")
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "ppo_overcooked.py"
    spec = importlib.util.spec_from_file_location("ppo_overcooked", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.default_threads(True, 2) == (1, 1)  # the 2-core machine's measured best
    assert module.default_threads(True, 16) == (8, 8)
    assert module.default_threads(True, 1) == (1, 1)
    args = module.parse_args([])
    assert args.threads is None and args.torch_threads is None  # resolved from the cores in main()


def test_bench_help_is_its_own():
    out = subprocess.run([sys.executable, "-m", "orrery", "bench", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "--worlds" in out.stdout and "--device" in out.stdout
    assert "COMMAND" not in out.stdout  # not the top-level help


# ----- item 5: render() ------------------------------------------------------

def _renderer_available() -> bool:
    return hasattr(orrery._core.Simulator, "render")


needs_renderer = pytest.mark.skipif(not _renderer_available(), reason="this build has no renderer (render/)")


def test_render_needs_a_render_mode():
    env = orrery.make("tag", device="cpu", threads=1)
    with pytest.raises(ValueError, match="render\\(\\) needs render_mode"):
        env.render()
    with pytest.raises(ValueError, match="render_mode='rgb' is not understood; expected one of"):
        orrery.make("tag", device="cpu", render_mode="rgb")
    env.close()


@needs_renderer
def test_render_rgb_array_one_world_and_a_list():
    env = orrery.make("tag", num_worlds=3, device="cpu", seed=0, threads=1, render_mode="rgb_array")
    frame = env.render(1, width=64, height=48)
    assert frame.shape == (48, 64, 3) and frame.dtype == np.uint8
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) > 2  # background and drawn agents
    frames = env.render([2, 1], width=64, height=48)
    assert frames.shape == (2, 48, 64, 3)
    np.testing.assert_array_equal(frames[1], frame)
    with pytest.raises(ValueError, match="world=3 is out of range"):
        env.render(3)
    env.close()


@needs_renderer
def test_render_in_every_adapter():
    from orrery.gymnasium import OrreryVectorEnv
    from orrery.puffer import OrreryAgentsVectorEnv

    if HAS_OVERCOOKED:
        one = gym.make("orrery/overcooked-v0", render_mode="rgb_array")
        one.reset(seed=0)
        assert one.render().shape == (512, 512, 3)
        one.close()
        vec = OrreryVectorEnv("overcooked", 2, render_mode="rgb_array", threads=1)
        assert vec.render().shape == (2, 512, 512, 3)
        vec.close()
    rows = OrreryAgentsVectorEnv("tag", num_worlds=2, render_mode="rgb_array", threads=1)
    assert rows.render().shape == (2, 512, 512, 3)
    rows.close()
    pz = pytest.importorskip("orrery.pettingzoo")
    par = pz.OrreryParallelEnv("tag", render_mode="rgb_array")
    par.reset(seed=0)
    assert par.render().shape == (512, 512, 3)
    par.close()


def test_render_human_opens_the_viewer(monkeypatch):
    from orrery import cli

    launched = []

    class FakePopen:
        def __init__(self, argv):
            launched.append(argv)

        def poll(self):
            return None

        def terminate(self):
            launched.append("closed")

    monkeypatch.setattr(orrery_env.subprocess, "Popen", FakePopen)
    monkeypatch.setattr(cli, "native_tool", lambda name: f"/bin/{name}")
    env = orrery.make("tag", num_worlds=4, device="cpu", seed=3, threads=1, render_mode="human", pursuers=3)
    assert env.render() is None and env.render() is None  # opened once
    names = ",".join(env.obs_names)
    assert launched == [["/bin/orrery-view", "tag", "--worlds", "4", "--seed", "3", "--device", "cpu",
                         "--opt", "pursuers=3", "--obs-names", names, "--action-names", "noop,up,down,left,right"]]
    env.close()
    assert launched[-1] == "closed"


# ----- item 6: Stable-Baselines3 ---------------------------------------------

@needs_overcooked
@pytest.mark.slow
def test_sb3_ppo_trains_on_the_vec_env():
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("torch")
    from stable_baselines3 import PPO
    from orrery.sb3 import OrrerySB3VecEnv

    venv = OrrerySB3VecEnv("overcooked", num_envs=8, seed=0, threads=1, layout="cramped_room", horizon=20)
    model = PPO("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=512)
    assert model.num_timesteps >= 512
    obs = venv.reset()
    for _ in range(20):
        obs, rew, done, infos = venv.step(model.predict(obs)[0])
    assert done.all()  # horizon 20: every world ended on this step...
    assert all(info["TimeLimit.truncated"] for info in infos)
    assert infos[0]["terminal_observation"].shape == obs.shape[1:]  # ...and kept its last observation
    assert not np.array_equal(infos[0]["terminal_observation"], obs[0])
    venv.close()


# ----- item 6: TorchRL --------------------------------------------------------

@needs_overcooked
def test_torchrl_env_passes_the_spec_check_and_resets_finished_worlds():
    pytest.importorskip("torchrl")
    from torchrl.envs.utils import check_env_specs
    from orrery.torchrl import OrreryTorchRLEnv

    env = OrreryTorchRLEnv("overcooked", num_worlds=4, seed=0, threads=1, layout="cramped_room", horizon=5)
    check_env_specs(env)
    rollout = env.rollout(12, break_when_any_done=False)  # TorchRL resets the finished worlds ("_reset")
    done = rollout["next", "done"].squeeze(-1)
    assert done.shape == (4, 12) and done[:, 4].all() and done[:, 9].all() and done.sum() == 8
    assert rollout["next", "reward"].shape == (4, 12, 1)
    env.close()


@needs_overcooked
@pytest.mark.slow
def test_torchrl_ppo_trains_on_the_env():
    pytest.importorskip("torchrl")
    import torch
    import torch.nn as nn
    from tensordict.nn import TensorDictModule
    from torchrl.modules import ProbabilisticActor, ValueOperator
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value import GAE
    try:
        from torchrl.collectors import SyncDataCollector as Collector
    except ImportError:  # torchrl >= 0.14 names it Collector
        from torchrl.collectors import Collector
    from orrery.torchrl import OrreryTorchRLEnv

    class JointCategorical(torch.distributions.Independent):
        """One categorical per chef, one joint log-probability per world."""

        def __init__(self, logits):
            super().__init__(torch.distributions.Categorical(logits=logits), 1)

        @property
        def deterministic_sample(self):
            return self.base_dist.logits.argmax(-1)

    class Flat(nn.Module):
        def forward(self, obs):
            return obs.flatten(-4).float()

    torch.manual_seed(0)
    env = OrreryTorchRLEnv("overcooked", num_worlds=8, seed=0, threads=1, layout="cramped_room", horizon=16)
    n_obs = 2 * 26 * 4 * 5
    net = nn.Sequential(Flat(), nn.Linear(n_obs, 64), nn.Tanh(), nn.Linear(64, 12), nn.Unflatten(-1, (2, 6)))
    actor = ProbabilisticActor(TensorDictModule(net, in_keys=["observation"], out_keys=["logits"]),
                               in_keys=["logits"], distribution_class=JointCategorical, return_log_prob=True,
                               spec=env.action_spec)
    value = ValueOperator(nn.Sequential(Flat(), nn.Linear(n_obs, 64), nn.Tanh(), nn.Linear(64, 1)),
                          in_keys=["observation"])
    collector = Collector(env, actor, frames_per_batch=8 * 16, total_frames=8 * 16 * 3)
    advantage, loss = GAE(gamma=0.99, lmbda=0.95, value_network=value), ClipPPOLoss(actor, value)
    optim = torch.optim.Adam(loss.parameters(), 1e-3)
    before = [p.detach().clone() for p in net.parameters()]
    batches = 0
    for data in collector:
        assert data.shape == (8, 16) and int(data["next", "done"].sum()) == 8  # each world ended once
        with torch.no_grad():
            advantage(data)
        terms = loss(data.reshape(-1))
        total = terms["loss_objective"] + terms["loss_critic"] + terms["loss_entropy"]
        assert torch.isfinite(total)
        optim.zero_grad()
        total.backward()
        optim.step()
        batches += 1
    collector.shutdown()
    assert batches == 3
    assert any(not torch.equal(a, b) for a, b in zip(before, net.parameters()))


def test_a_framework_that_is_not_installed_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ModuleNotFoundError, match=r"framework='torch' needs the package 'torch'.*"
                                                  r"pip install 'orrery-rl\[torch\]'.*framework='dlpack'"):
        orrery.make("tag", device="cpu", framework="torch", threads=1)


@pytest.mark.parametrize("name,options", [("tag", {}), ("overcooked", {"layout": "coordination_ring"})])
def test_observations_stay_within_the_declared_bounds(name, options):
    if name not in orrery.list_envs():
        pytest.skip(f"{name} is not registered")
    env = orrery.make(name, num_worlds=64, device="cpu", seed=2, threads=1, **options)
    space = env.single_observation_space
    finite = np.isfinite(space.high)
    assert finite.any() and space.high[finite].max() <= 255  # declared, not the dtype's range
    if env.obs.dtype == np.uint8:
        assert space.high.min() == 1
    for step in range(600):
        obs, *_ = env.step(env.sample_actions(seed=step))
        inside = np.all((obs >= space.low) & (obs <= space.high), axis=tuple(range(1, obs.ndim)))
        assert inside.all(), f"step {step}: worlds {np.flatnonzero(~inside)} leave the declared bounds"
    env.close()


# ----- item 6: a step inside jax.jit and lax.scan -----------------------------

@pytest.mark.parametrize("use_ffi", [True, False], ids=["xla_ffi", "io_callback"])
def test_jax_step_inside_jit_and_scan_matches_eager_steps(use_ffi):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from orrery.jax import make_step

    actions = np.random.default_rng(0).integers(0, 5, size=(12, 6, 4)).astype(np.int32)
    eager = orrery.make("tag", num_worlds=6, device="cpu", seed=11, threads=1, horizon=5)
    expected = [tuple(np.array(x) for x in eager.step(a)[:4]) for a in actions]

    env = orrery.make("tag", num_worlds=6, device="cpu", seed=11, threads=1, horizon=5)
    step = make_step(env, use_ffi=use_ffi)

    @jax.jit
    def rollout(acts):
        def body(total, a):
            obs, reward, term, trunc = step(a)
            return total + reward.sum(), (obs, reward, term, trunc)
        return jax.lax.scan(body, jnp.float32(0), acts)

    total, (obs, reward, term, trunc) = rollout(jnp.asarray(actions))
    for k, (o, r, t, tr) in enumerate(expected):
        np.testing.assert_array_equal(np.asarray(obs[k]), o)
        np.testing.assert_array_equal(np.asarray(reward[k]), r)
        np.testing.assert_array_equal(np.asarray(term[k]), t)
        np.testing.assert_array_equal(np.asarray(trunc[k]), tr)
    assert np.asarray(trunc).any()  # the horizon ended episodes inside the scan (next-step autoreset)
    np.testing.assert_allclose(float(total), sum(r.sum() for _, r, _, _ in expected), rtol=1e-5)
    with pytest.raises(ValueError, match="actions has shape \\(6,\\); expected \\(6, 4\\)"):
        step(jnp.zeros(6, jnp.int32))
    env.close()
    eager.close()


def test_jax_eager_step_lends_views_of_the_simulators_outputs():
    """Eager make_step on a CPU env is zero-copy: the arrays are the simulator's
    tensors, lent until the next call, which deletes them and steps only after
    XLA has run every computation already dispatched that reads them."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from orrery.jax import make_step

    names = ("obs", "reward", "terminated", "truncated")
    actions = np.random.default_rng(1).integers(0, 5, size=(4, 64, 4)).astype(np.int32)
    twin = orrery.make("tag", num_worlds=64, device="cpu", seed=3, threads=1, horizon=2)
    expected = [tuple(np.array(x) for x in twin.step(a)[:4]) for a in actions]
    env = orrery.make("tag", num_worlds=64, device="cpu", seed=3, threads=1, horizon=2)
    step = make_step(env)

    out = step(jnp.asarray(actions[0]))
    for a, n, want in zip(out, names, expected[0]):
        assert a.unsafe_buffer_pointer() == env.host_view(n).ctypes.data, n  # the simulator's memory
        np.testing.assert_array_equal(np.asarray(a), want)

    # A slow computation that reads obs only after a long reduction of its own,
    # dispatched (asynchronously) just before the next step: it sees step 1's obs.
    # (jit compiles before it dispatches; the run itself is asynchronous.)
    noise = jnp.full((500, 500), 0.002, jnp.float32)
    slow = jax.jit(lambda obs, m: jnp.where(jnp.linalg.matrix_power(m, 12).sum() > -1.0, obs, 0.0).sum())
    pending = slow(out[0], noise)
    out2 = step(actions[1])  # NumPy actions: a JAX array would queue behind `pending` and hide a race
    assert all(a.is_deleted() for a in out)
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(out[0])
    np.testing.assert_allclose(float(pending), expected[0][0].sum(), rtol=1e-5)
    for a, want in zip(out2, expected[1]):
        np.testing.assert_array_equal(np.asarray(a), want)

    # A refused call (a bad value) raises before anything changes: the lent arrays stay valid.
    with pytest.raises(ValueError, match="out of range"):
        step(np.full((64, 4), 9, np.int32))
    np.testing.assert_array_equal(np.asarray(out2[0]), expected[1][0])

    # Donating a lent array does not let XLA write into the simulator.
    before = env.host_view("obs").copy()
    jax.block_until_ready(jax.jit(lambda x: x * 0.0, donate_argnums=0)(out2[0]))
    np.testing.assert_array_equal(env.host_view("obs"), before)

    # Inside jit the outputs are XLA's own buffers (copies), kept as values.
    jitted = jax.jit(step)(jnp.asarray(actions[2]))
    assert jitted[0].unsafe_buffer_pointer() != env.host_view("obs").ctypes.data
    np.testing.assert_array_equal(np.asarray(jitted[0]), expected[2][0])
    # zero_copy=False: eager copies too, which survive the next step.
    kept = make_step(env, zero_copy=False)(jnp.asarray(actions[3]))
    step(jnp.asarray(actions[0]))
    for a, want in zip(kept, expected[3]):
        np.testing.assert_array_equal(np.asarray(a), want)
    env.close()
    twin.close()


# ----- item 9: the viewer shows names ------------------------------------------

def test_orrery_view_passes_the_names_the_env_declares(monkeypatch):
    from orrery import cli

    if "view" not in cli._COMMANDS:
        pytest.skip("this build has no viewer")
    ran = []
    monkeypatch.setattr(cli.os, "execv", lambda path, argv: ran.append(argv))
    cli.main(["view", "tag", "--opt", "pursuers=3", "--worlds", "8", "--frames", "2"])
    argv = ran[0]
    obs = argv[argv.index("--obs-names") + 1].split(",")
    assert len(obs) == 7 + 4 * 4 and obs[:3] == ["role", "x", "y"]  # 3 pursuers + 2 evaders
    assert argv[argv.index("--action-names") + 1] == "noop,up,down,left,right"
    ran.clear()
    cli.main(["view", "tag", "--obs-names", "mine"])
    assert ran[0].count("--obs-names") == 1  # the user's names win


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="needs xvfb-run")
def test_the_viewer_draws_with_names(tmp_path):
    from orrery import cli

    if "view" not in cli._COMMANDS or not HAS_OVERCOOKED:
        pytest.skip("this build has no viewer or no Overcooked")
    shot = tmp_path / "view.png"
    names = ",".join(orrery.make("overcooked", device="cpu", threads=1).obs_names)
    out = subprocess.run(["xvfb-run", "-a", cli.native_tool("orrery-view"), "overcooked", "--frames", "3",
                          "--obs-names", names, "--action-names", "north,south,east,west,stay,interact",
                          "--screenshot", str(shot)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert shot.stat().st_size > 1000


def _tag_policy(path):
    """A small TorchScript policy for tag: obs [N, 4, 19] -> logits [N, 4, 5]."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    torch.jit.save(torch.jit.script(torch.nn.Linear(19, 5)), str(path))
    return path


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="needs xvfb-run")
def test_the_viewer_plays_a_saved_policy(tmp_path):
    from orrery import cli
    from orrery.play import load_policy, play_episode

    if "view" not in cli._COMMANDS:
        pytest.skip("this build has no viewer")
    policy = _tag_policy(tmp_path / "policy.pt")
    played = play_episode("tag", load_policy(policy), seed=3, horizon=12)
    assert len(played["actions"]) == 12 and len(set(played["actions"])) > 1
    out = subprocess.run(["xvfb-run", "-a", sys.executable, "-m", "orrery", "view", "tag", "--play", str(policy),
                          "--seed", "3", "--opt", "horizon=12", "--speed", "240", "--frames", "120"],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    assert f"state hash after replaying 12 of 12 steps: {played['state_hash']:016x}" in out.stdout, out.stdout


def test_saved_policies_load_and_act(tmp_path, monkeypatch):
    import importlib.util
    import pathlib

    pytest.importorskip("torch")
    from orrery.play import load_policy

    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "ppo_overcooked.py"
    spec = importlib.util.spec_from_file_location("ppo_overcooked", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    env = orrery.make("tag", num_worlds=2, device="cpu", seed=0, threads=1)
    agent = example.Agent((19,), 5, 16, "mlp")
    example.save_policy(agent, str(tmp_path / "ppo.pt"))  # what --save-policy writes
    actions = load_policy(tmp_path / "ppo.pt")(env.obs)
    assert actions.shape == (2, 4) and actions.min() >= 0 and actions.max() <= 4
    env.step(actions)
    env.close()
    with pytest.raises(ValueError, match="is not TorchScript"):
        (tmp_path / "junk.pt").write_bytes(b"not a model")
        load_policy(tmp_path / "junk.pt")
    (tmp_path / "p.onnx").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ModuleNotFoundError, match=r"an ONNX policy needs the package 'onnxruntime'.*orrery-rl\[onnx\]"):
        load_policy(tmp_path / "p.onnx")


def test_policy_outputs_become_the_envs_actions():
    """orrery.play.as_actions: actions pass; logits [.., n] and, for K-part
    actions, [.., K, n] or [.., K * n] are played greedily from the range's low
    end; integers of the right count are reshaped; anything else is named."""
    from types import SimpleNamespace

    from orrery.play import as_actions

    parts = SimpleNamespace(actions=np.zeros((2, 4, 5), np.int32), action_range=(-5, 5))
    logits = np.zeros((2, 4, 5, 11), np.float32)
    logits[..., 7] = 1.0
    logits[1, 3, 2, 0] = 9.0
    want = np.full((2, 4, 5), 2)
    want[1, 3, 2] = -5
    np.testing.assert_array_equal(as_actions(parts, logits), want)
    np.testing.assert_array_equal(as_actions(parts, logits.reshape(2, 4, 55)), want)
    np.testing.assert_array_equal(as_actions(parts, want), want)
    flat = SimpleNamespace(actions=np.zeros((1, 2), np.int32), action_range=(0, 5))
    np.testing.assert_array_equal(as_actions(flat, np.array([5, 2])), [[5, 2]])
    np.testing.assert_array_equal(as_actions(flat, np.eye(6)[[[3, 1]]]), [[3, 1]])
    with pytest.raises(ValueError, match=r"shape \(2, 4, 54\); expected actions \(2, 4, 5\) or logits "
                                         r"\(2, 4, 5, 11\) or \(2, 4, 55\)"):
        as_actions(parts, np.zeros((2, 4, 54), np.float32))
    with pytest.raises(ValueError, match=r"shape \(2,\); expected actions \(1, 2\)"):
        as_actions(flat, np.array([0.5, 1.5]))


def test_jax_in_place_step_reads_the_actions_where_xla_holds_them():
    """orrery.jax.InPlaceStep, Env.step's path for a JAX array of actions on a
    CUDA env with framework="jax" (tests/python/test_gpu.py runs it there),
    here with the CPU handler: one custom call with no outputs of its own; the
    same trajectory as env.step with NumPy actions, the simulator's tensors
    holding the actions and outputs afterwards; a bad value raises naming it,
    with nothing changed."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from orrery.jax import IN_PLACE_TARGET, InPlaceStep

    env = orrery.make("tag", num_worlds=6, device="cpu", seed=11, threads=2, horizon=5, framework="jax")
    twin = orrery.make("tag", num_worlds=6, device="cpu", seed=11, threads=2, horizon=5)
    step = env._views["_jax_in_place"] = InPlaceStep(env)  # the one Env._step_jax uses
    hlo = step._call.lower(jnp.zeros((6, 4), jnp.int32)).as_text()
    assert IN_PLACE_TARGET in hlo and "callback" not in hlo.lower()
    assert step.accepts(jnp.zeros((6, 4), jnp.int32))
    assert not step.accepts(jnp.zeros((6, 4), jnp.int16)) and not step.accepts(jnp.zeros((6, 3), jnp.int32))
    assert not step.accepts(np.zeros((6, 4), np.int32))  # NumPy keeps Env.step's own paths
    actions = np.random.default_rng(3).integers(0, 5, size=(14, 6, 4)).astype(np.int32)
    for k, a in enumerate(actions):
        calls = step._stepper.calls
        if k % 2:
            step(jnp.asarray(a))  # returns once the handler has run: the step is taken
        else:
            assert env._step_jax(jnp.asarray(a))  # through Env's method
        assert step._stepper.calls == calls + 1
        expected = [np.array(x) for x in twin.step(a)[:4]]
        for name, want in zip(("obs", "reward", "terminated", "truncated"), expected):
            np.testing.assert_array_equal(np.from_dlpack(env.tensors[name]).reshape(want.shape), want)
        # The tensor holds what the step read (a world the step reset starts with zeros, as the twin's).
        np.testing.assert_array_equal(np.from_dlpack(env.tensors["action"]), np.from_dlpack(twin.tensors["action"]))
    held = np.from_dlpack(env.tensors["action"]).copy()
    assert [env.state_hash(w) for w in range(6)] == [twin.state_hash(w) for w in range(6)]
    bad = actions[0].copy()
    bad[1, 2] = 9
    with pytest.raises(ValueError, match="'action' holds 9 at world 1, index 2"):
        step(jnp.asarray(bad))
    np.testing.assert_array_equal(np.from_dlpack(env.tensors["action"]), held)  # untouched
    assert [env.state_hash(w) for w in range(6)] == [twin.state_hash(w) for w in range(6)]
    step(jnp.asarray(actions[0]))
    twin.step(actions[0])
    assert [env.state_hash(w) for w in range(6)] == [twin.state_hash(w) for w in range(6)]
    env.close()
    twin.close()


def test_jax_ffi_step_is_one_custom_call_and_reports_bad_actions():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from orrery.jax import FFI_TARGET, make_step

    env = orrery.make("tag", num_worlds=2, device="cpu", seed=0, threads=1)
    step = make_step(env)
    hlo = jax.jit(step).lower(jnp.zeros((2, 4), jnp.int32)).as_text()
    assert FFI_TARGET in hlo and "callback" not in hlo.lower()  # XLA's custom call, not a Python callback
    twin = orrery.make("tag", num_worlds=2, device="cpu", seed=0, threads=1)
    with pytest.raises(Exception, match="holds 9 at world 0"):
        jax.block_until_ready(jax.jit(step)(jnp.full((2, 4), 9, jnp.int32)))
    # Refused where XLA holds the values, before anything changed: the action tensor included.
    assert [env.state_hash(w) for w in range(2)] == [twin.state_hash(w) for w in range(2)]
    zeros = np.zeros((2, 4), np.int32)
    jax.block_until_ready(jax.jit(step)(jnp.asarray(zeros)))
    twin.step(zeros)
    assert env.state_hash(0) == twin.state_hash(0)  # the refused call did not step
    env.close()
    twin.close()
