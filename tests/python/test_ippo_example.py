"""examples/ippo_overcooked.py in small runs: a few updates on the CPU (finite
losses and returns that change, weights that move), the same seed giving the
same run, the CSV and summary it writes, two processes under torchrun (Gloo)
keeping their weights equal, and on a GPU the CUDA-graph iteration giving the
same env states and weights as the eager one. Learning to the target is
measured separately (docs/python.md), not asserted here."""

import importlib.util
import math
import os
import pathlib
import subprocess
import sys

import pytest

import orrery
from conftest import requires_cuda

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif("overcooked" not in orrery.list_envs(), reason="no Overcooked")

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "ippo_overcooked.py"
# 4 worlds x 16 steps per iteration; episodes of 24 steps end inside the second iteration.
SMALL = ["--num-worlds", "4", "--num-steps", "16", "--update-epochs", "2", "--num-minibatches", "2",
         "--env-opt", "horizon=24", "--threads", "1", "--torch-threads", "1"]


def load_example():
    spec = importlib.util.spec_from_file_location("ippo_overcooked", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_iterations(trainer, n):
    """n iterations; each one's ([episodes, sparse sum, shaped sum], [policy, value, entropy, kl, steps])."""
    per_iter = trainer.N * trainer.T
    out = []
    for i in range(n):
        trainer.set_schedule(i * per_iter)
        trainer.iteration()
        out.append(trainer.take_stats())
    return out


def weights(trainer):
    return [p.detach().clone() for p in trainer.params]


def state_hashes(trainer):
    return [trainer.env.state_hash(w) for w in range(trainer.N)]


def test_a_few_updates_on_the_cpu_move_the_weights_with_finite_losses():
    ippo = load_example()
    trainer = ippo.Trainer(ippo.parse_args(SMALL + ["--device", "cpu", "--seed", "3"]))
    start = weights(trainer)
    stats = run_iterations(trainer, 3)
    trainer.close()
    losses = [s[1] for s in stats]
    for policy, value, entropy, kl, steps in losses:
        assert steps == 2 * 2  # epochs x minibatches
        assert all(math.isfinite(v) for v in (policy, value, entropy, kl))
        assert 0 < entropy / steps <= math.log(6) + 1e-6  # mean entropy of a 6-action policy
    assert losses[0][:3] != losses[1][:3] != losses[2][:3]
    assert [s[0][0] for s in stats] == [0, 4, 4]  # each world ends an episode at steps 24 and 48
    episodes, sparse, shaped = stats[1][0]
    assert math.isfinite(sparse) and math.isfinite(shaped) and sparse >= 0 and shaped >= 0
    moved = [not torch.equal(a, b) for a, b in zip(start, weights(trainer))]
    assert all(moved), "every layer's weights change in an update"
    assert all(torch.isfinite(p).all() for p in trainer.params)


def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    ippo = load_example()
    runs = []
    for seed in (5, 5, 6):
        trainer = ippo.Trainer(ippo.parse_args(SMALL + ["--device", "cpu", "--seed", str(seed)]))
        run_iterations(trainer, 2)
        runs.append((state_hashes(trainer), weights(trainer), trainer.act_buf.clone()))
        trainer.close()
    (h1, w1, a1), (h2, w2, a2), (h3, w3, a3) = runs
    assert h1 == h2 and all(torch.equal(a, b) for a, b in zip(w1, w2)) and torch.equal(a1, a2)
    assert h1 != h3 and not torch.equal(a1, a3)


def test_main_prints_the_summary_and_writes_the_curve(tmp_path, capsys):
    ippo = load_example()
    curve = tmp_path / "curve.csv"
    result = ippo.main(SMALL + ["--device", "cpu", "--seed", "2", "--total-timesteps", "192", "--csv", str(curve),
                                "--quiet"])
    assert result["steps"] == 192 and result["graphs"] == "none"
    assert result["history"] and all(math.isfinite(r) for _, _, r in result["history"])
    out = capsys.readouterr().out
    summary = [line for line in out.splitlines() if line.startswith("summary:")]
    assert len(summary) == 1 and "layout=cramped_room rules=overcooked_ai seed=2" in summary[0]
    assert "steps=192" in summary[0]
    rows = curve.read_text().splitlines()
    assert rows[0].split(",")[:4] == ["wall_s", "train_s", "env_steps", "sparse_return"]
    assert len(rows) == 1 + len(result["history"])  # one row per iteration in which episodes ended
    assert [int(r.split(",")[2]) for r in rows[1:]] == [s for s, _, _ in result["history"]]
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import ppo_table
    finally:
        sys.path.pop(0)
    assert ppo_table.parse_summary(summary[0])["steps"] == "192"
    # Every row of a run shorter than a million steps is in its tail.
    tail = float(ppo_table.parse_summary(summary[0])["last_1m_return"])
    rows = [r for _, _, r in result["history"]]
    assert tail == pytest.approx(sum(rows) / len(rows), abs=0.051)


def test_tail_return_averages_the_last_million_steps():
    ippo = load_example()
    history = [(500_000, 5.0, 100.0), (1_500_000, 9.0, 200.0), (2_000_000, 11.0, 230.0), (2_500_000, 13.0, 250.0)]
    assert ippo.tail_return(history, 2_500_000) == pytest.approx((230.0 + 250.0) / 2)
    assert ippo.tail_return(history, 2_400_000) == pytest.approx((200.0 + 230.0 + 250.0) / 3)
    assert math.isnan(ippo.tail_return([], 0))


def test_time_limit_stops_the_run():
    ippo = load_example()
    result = ippo.main(SMALL + ["--device", "cpu", "--total-timesteps", "100000000", "--time-limit", "0.001",
                                "--quiet"])
    assert result["steps"] == 64  # one iteration, then the (long past) limit stops it


def test_its_adam_is_torch_optim_adam_on_the_cpu_and_close_to_it_with_device_scalars():
    """The example's Adam (it spares the start-up torch.optim's import of
    torch._dynamo): bit for bit torch.optim.Adam's CPU update, with the
    learning rate changed between steps as the schedule does; the CUDA form
    (learning rate and step count as tensors, foreach kernels), run here on
    CPU tensors, within float rounding of it."""
    ippo = load_example()

    def model():
        torch.manual_seed(0)
        return ippo.ActorCritic(52, 6, 16)

    x = torch.randn(32, 52, generator=torch.Generator().manual_seed(1))
    for capturable in (False, True):
        mine, ref = model(), model()
        opt = ippo.Adam(list(mine.parameters()), 1e-3, eps=1e-5, capturable=capturable)
        ref_opt = torch.optim.Adam(list(ref.parameters()), lr=1e-3, eps=1e-5)
        for i in range(20):
            opt.set_lr(1e-3 * (1 - i / 25))
            ref_opt.param_groups[0]["lr"] = 1e-3 * (1 - i / 25)
            for net, o in ((mine, opt), (ref, ref_opt)):
                o.zero_grad()
                logits, value = net(x)
                (logits.square().sum() + value.sum()).backward()
                o.step()
        pairs = list(zip(mine.parameters(), ref.parameters()))
        assert all(not torch.equal(p, q0) for (p, _), q0 in zip(pairs, model().parameters())), "the weights moved"
        if capturable:
            assert all(torch.allclose(p, q, rtol=1e-5, atol=1e-6) for p, q in pairs)
        else:
            assert all(torch.equal(p, q) for p, q in pairs)
    # The CUDA form reads no value on the host (a CUDA graph capture would fail):
    # on meta tensors, which hold no data, any .item() or host copy raises.
    params = [torch.zeros(3, device="meta", requires_grad=True), torch.zeros(2, 2, device="meta", requires_grad=True)]
    for p in params:
        p.grad = torch.zeros_like(p)
    opt = ippo.Adam(params, 1e-3, eps=1e-5, capturable=True)
    opt.set_lr(5e-4)
    opt.zero_grad()
    opt.step()
    assert opt.steps.device.type == "meta" and opt.lr.device.type == "meta"


def test_as_a_script_it_prints_where_the_start_up_went_and_never_imports_dynamo(tmp_path):
    """Run as a script (env made on a thread while torch imports; on a machine
    without CUDA the thread's guess cuda:0 fails and main() makes it on the
    CPU): one startup line with the stages in the order reached, and no
    torch._dynamo, whose import is seconds of start-up."""
    code = ("import runpy, sys\n"
            f"sys.argv = [{str(EXAMPLE)!r}] + sys.argv[1:]\n"
            f"runpy.run_path({str(EXAMPLE)!r}, run_name='__main__')\n"
            "print('dynamo imported:', 'torch._dynamo' in sys.modules)\n")
    cmd = [sys.executable, "-c", code, *SMALL, "--total-timesteps", "128", "--quiet"]
    done = subprocess.run(cmd, cwd=tmp_path, env=dict(os.environ, PYTHONUNBUFFERED="1"), capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "dynamo imported: False" in lines
    startup = [line for line in lines if line.startswith("startup:")]
    assert len(startup) == 1, done.stdout
    fields = dict(item.split("=") for item in startup[0].split()[1:])
    stages = [name for name in fields if name != "env_native_s"]
    at = [float(fields[name]) for name in stages]
    assert at == sorted(at) and 0 <= at[0] and at[-1] < 240
    for stage in ("script", "orrery", "torch", "device", "env", "model", "first_iteration", "first_row"):
        assert stage in stages, startup[0]
    assert stages.index("torch") < stages.index("model") < stages.index("first_iteration") < stages.index("first_row")
    assert float(fields["env_native_s"]) >= 0


def _torchrun(tmp_path, device, extra=()):
    import torch.distributed as dist

    if not dist.is_available():
        pytest.skip("torch.distributed is not available in this build of torch")
    if (device == "cpu" or "gloo" in extra) and not dist.is_gloo_available():
        pytest.skip("torch.distributed has no Gloo backend here")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(EXAMPLE)]
    cmd += SMALL + ["--device", device, "--total-timesteps", "384", "--seed", "4", "--quiet", *extra]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = [line for line in done.stdout.splitlines() if line.startswith("summary:")]
    assert len(summary) == 1, done.stdout  # rank 0 alone prints it
    return summary[0]


@pytest.mark.slow
def test_two_processes_under_torchrun_on_the_cpu_keep_equal_weights(tmp_path):
    """Gloo all-reduce of the gradients: each rank steps its own worlds (seeds
    offset by rank), so the ranks' weights stay equal only if every update
    averages the gradients of both."""
    summary = _torchrun(tmp_path, "cpu")
    assert "steps=384" in summary  # 3 iterations x 4 worlds x 16 steps x 2 ranks
    assert "ranks=2 rank_weight_spread=0 " in summary + " ", summary


@requires_cuda
@pytest.mark.parametrize("mode", ["all", "rollout"])
def test_the_captured_iteration_matches_the_eager_one_on_the_gpu(mode):
    """Eager for 3 iterations against eager for 1, then CUDA-graph replays for 2:
    the same env states (every world's hash), actions and weights, bit for bit.
    Episodes of 20 steps, so the 48 steps end mid-episode (with 24, every world
    would just have been reset and its hash would not depend on the actions)."""
    ippo = load_example()
    small = [a if a != "horizon=24" else "horizon=20" for a in SMALL]
    args = small + ["--device", "cuda", "--seed", "7", "--num-worlds", "32"]
    eager = ippo.Trainer(ippo.parse_args(args), device=torch.device("cuda:0"))
    graph = ippo.Trainer(ippo.parse_args(args), device=torch.device("cuda:0"))
    # Both trainers draw from torch's one CUDA generator (seeded by the last
    # constructor): each starts from the state the constructors left.
    rng = torch.cuda.get_rng_state()
    run_iterations(eager, 3)
    torch.cuda.set_rng_state(rng)
    per_iter = graph.N * graph.T
    graph.set_schedule(0)
    graph.iteration()
    graph.take_stats()
    graph.capture(mode)
    assert len(graph.graphs) == (2 if mode == "all" else 1)
    for i in (1, 2):
        graph.set_schedule(i * per_iter)
        graph.iteration()
        graph.take_stats()
    torch.cuda.synchronize()
    assert state_hashes(graph) == state_hashes(eager)
    assert torch.equal(graph.act_buf, eager.act_buf)
    assert all(torch.equal(a, b) for a, b in zip(weights(graph), weights(eager)))
    eager.close()
    graph.close()


@requires_cuda
def test_a_gpu_run_captures_and_learns_something():
    ippo = load_example()
    result = ippo.main(SMALL + ["--device", "cuda", "--num-worlds", "64", "--total-timesteps", "8192", "--quiet"])
    assert result["graphs"] == "all" and result["steps"] == 8192
    assert all(math.isfinite(v) for v in result["losses"])


@requires_cuda
@pytest.mark.slow
def test_two_processes_under_torchrun_on_one_gpu_keep_equal_weights(tmp_path):
    """The CUDA path under torchrun (each rank's own env and worlds on the same
    GPU, its rollout captured in a CUDA graph, the gradient all-reduce between
    replays) on one GPU: Gloo all-reduces the CUDA gradients, as NCCL refuses
    two ranks on one device. Equal weights need every update's all-reduce."""
    summary = _torchrun(tmp_path, "cuda:0", ["--dist-backend", "gloo"])
    assert "steps=384" in summary, summary
    assert "graphs=rollout" in summary and "ranks=2 rank_weight_spread=0 " in summary + " ", summary


@requires_cuda
@pytest.mark.slow
def test_two_processes_under_torchrun_on_gpus_keep_equal_weights(tmp_path):
    if torch.cuda.device_count() < 2:
        pytest.skip("NCCL needs one GPU per process; this machine has one")
    summary = _torchrun(tmp_path, "cuda")
    assert "graphs=rollout" in summary and "ranks=2 rank_weight_spread=0 " in summary + " ", summary
