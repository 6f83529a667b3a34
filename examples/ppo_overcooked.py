"""PPO self-play on Orrery envs, CleanRL style: one file, PyTorch, CPU or GPU.

One policy plays every agent (parameter sharing); each (world, agent) pair is
a row of the batch. Overcooked trains on the sparse team reward plus the
shaped per-agent reward, annealed to zero over --shaped-anneal of training.

    python examples/ppo_overcooked.py --layout cramped_room
    python examples/ppo_overcooked.py --env tag --total-timesteps 200000
    torchrun --nproc_per_node=2 examples/ppo_overcooked.py --device cuda

Under torchrun each process owns its GPU and its own worlds, seeds are offset
by rank, gradients are averaged and statistics summed with all_reduce.
Logs go to TensorBoard (--log-dir); --video saves a clip of a trained episode
through the viewer's recorder (orrery.record) when the build has one.
"""

from __future__ import annotations

import argparse
import copy
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributions import Categorical

import orrery


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", default="overcooked")
    p.add_argument("--layout", default="cramped_room", help="Overcooked layout (ignored by other envs)")
    p.add_argument("--env-opt", action="append", default=[], metavar="KEY=VALUE", help="more env options")
    p.add_argument("--num-worlds", type=int, default=64, help="worlds per process")
    p.add_argument("--num-steps", type=int, default=200, help="steps per rollout")
    p.add_argument("--total-timesteps", type=int, default=4_000_000, help="env steps over all processes")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--anneal-lr", type=int, default=1)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--shaped-anneal", type=float, default=0.5, help="fraction of training to anneal shaped reward")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--net", choices=["auto", "mlp", "cnn"], default="auto")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda (cuda:LOCAL_RANK under torchrun)")
    p.add_argument("--threads", type=int, default=None,
                   help="env worker threads (default: half this process's cores on the CPU, at least 1)")
    p.add_argument("--torch-threads", type=int, default=None,
                   help="torch intra-op threads (default: the other half on the CPU; torch's own on a GPU)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log-dir", default="runs", help="TensorBoard folder ('' to disable)")
    p.add_argument("--run-name", default=None)
    p.add_argument("--save-model", default="", help="write the trained weights here (a state_dict)")
    p.add_argument("--save-policy", default="",
                   help="write the trained policy as TorchScript (orrery view ENV --play FILE watches it)")
    p.add_argument("--video", default="", help="save a clip of one trained episode (needs orrery.record)")
    p.add_argument("--no-progress", action="store_true", help="no tqdm bar")
    return p.parse_args(argv)


def setup_distributed(args):
    """(rank, world_size, torch device); one process per GPU under torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = args.device.startswith("cuda") or (args.device == "auto" and torch.cuda.is_available())
    device = torch.device(f"cuda:{local}" if use_cuda else "cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return rank, world, device


def env_kwargs(args):
    kwargs = {}
    if args.env == "overcooked":
        kwargs["layout"] = args.layout
    for item in args.env_opt:
        key, _, value = item.partition("=")
        kwargs[key] = value
    return kwargs


def layer(m, std=np.sqrt(2), bias=0.0):
    nn.init.orthogonal_(m.weight, std)
    nn.init.constant_(m.bias, bias)
    return m


class Agent(nn.Module):
    """Actor-critic over one agent's observation: a small CNN for image
    observations ([C, H, W], as Overcooked's), else an MLP."""

    def __init__(self, obs_shape, num_actions, hidden, net):
        super().__init__()
        if net == "auto":
            net = "cnn" if len(obs_shape) == 3 else "mlp"
        if net == "cnn":
            c, h, w = obs_shape
            self.body = nn.Sequential(
                layer(nn.Conv2d(c, 32, 3, padding=1)), nn.ReLU(),
                layer(nn.Conv2d(32, 32, 3, padding=1)), nn.ReLU(),
                nn.Flatten(), layer(nn.Linear(32 * h * w, hidden)), nn.ReLU())
        else:
            flat = int(np.prod(obs_shape))
            self.body = nn.Sequential(
                nn.Flatten(), layer(nn.Linear(flat, hidden)), nn.Tanh(),
                layer(nn.Linear(hidden, hidden)), nn.Tanh())
        self.actor = layer(nn.Linear(hidden, num_actions), std=0.01)
        self.critic = layer(nn.Linear(hidden, 1), std=1.0)

    def value(self, x):
        return self.critic(self.body(x)).squeeze(-1)

    def act(self, x, action=None):
        h = self.body(x)
        dist_ = Categorical(logits=self.actor(h))
        if action is None:
            action = dist_.sample()
        return action, dist_.log_prob(action), dist_.entropy(), self.critic(h).squeeze(-1)


class PolicyLogits(nn.Module):
    """The actor alone, over a batch of worlds: obs [N, agents, ...] -> logits
    [N, agents, actions]. What --save-policy writes as TorchScript (orrery.play)."""

    def __init__(self, agent: Agent):
        super().__init__()
        self.body, self.actor = agent.body, agent.actor

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        n, a = obs.shape[0], obs.shape[1]
        x = obs.reshape([n * a] + list(obs.shape[2:])).float()
        return self.actor(self.body(x)).reshape(n, a, -1)


def save_policy(agent: Agent, path: str) -> None:
    """Writes the agent's policy as TorchScript, on the CPU (a copy: training's stays on its device).
    Logit k is action value k: both shipped envs' actions start at 0."""
    module = torch.jit.script(PolicyLogits(copy.deepcopy(agent)).to("cpu").eval())
    torch.jit.save(module, path)


class EpisodeStats:
    """Per-world running returns; finished episodes are summed for logging."""

    def __init__(self, n, device):
        self.sparse = torch.zeros(n, device=device)
        self.shaped = torch.zeros(n, device=device)
        self.length = torch.zeros(n, device=device)
        self.totals = torch.zeros(4, device=device)  # episodes, sparse, shaped, length

    def update(self, sparse, shaped, done):
        self.sparse += sparse
        self.shaped += shaped
        self.length += 1
        d = done.float()
        self.totals += torch.stack([d.sum(), (self.sparse * d).sum(), (self.shaped * d).sum(), (self.length * d).sum()])
        keep = 1.0 - d
        self.sparse *= keep
        self.shaped *= keep
        self.length *= keep

    def take(self, world_size):
        t = self.totals.clone()
        if world_size > 1:
            dist.all_reduce(t)
        self.totals.zero_()
        return t.tolist()


def rewards_of(reward, info, agents):
    """(sparse team reward per world, shaped reward per world, per-agent shaped)."""
    reward = reward.reshape(reward.shape[0], agents).float()
    if "sparse_r_by_agent" in info:
        sparse = info["sparse_r_by_agent"].reshape(-1, agents).float().sum(1)
        shaped_agent = info["shaped_r_by_agent"].reshape(-1, agents).float()
    else:
        sparse = reward.sum(1)
        shaped_agent = torch.zeros_like(reward)
    return reward, sparse, shaped_agent


def save_video(args, agent, device):
    """Records one greedy episode through the viewer's recorder, if this build has it."""
    from orrery import record

    if not record.available():
        print("--video: this build of Orrery has no recorder (it needs Vulkan at build time); no clip saved")
        return

    def policy(obs):
        with torch.no_grad():
            x = torch.as_tensor(np.asarray(obs), device=device).float()
            return agent.act(x.reshape((-1,) + x.shape[2:]))[0].reshape(x.shape[:2]).cpu().numpy()

    result = record.record_episode(args.env, args.video, policy=policy, seed=args.seed, **env_kwargs(args))
    print(f"saved {result['video']} ({result['steps']} steps, return {result['return']:.1f})")


def default_threads(cpu_training: bool, cores: int):
    """(env threads, torch threads) that fit ``cores``. On the CPU the env step and
    the policy take turns, and each side's spinning workers slow the other: on 2
    cores 1 + 1 ran 1,174 env-steps/s against 254-361 with both at every core.
    Halving per side fits that. On a GPU the env does not use CPU threads."""
    half = max(1, cores // 2)
    return (half, half) if cpu_training else (1, 0)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def main(argv=None):
    args = parse_args(argv)
    rank, world_size, device = setup_distributed(args)
    env_threads, torch_threads = default_threads(device.type == "cpu", usable_cores() // world_size)
    args.threads = env_threads if args.threads is None else args.threads
    args.torch_threads = torch_threads if args.torch_threads is None else args.torch_threads
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)  # identical initial weights on every rank
    env = orrery.make(args.env, num_worlds=args.num_worlds, device="cpu" if device.type == "cpu" else str(device),
                      seed=args.seed + 1000 * rank, autoreset="same_step", threads=args.threads,
                      framework="torch", **env_kwargs(args))
    agents = env.num_agents
    obs_shape = tuple(env.obs.shape[2:])
    lo, hi = env.action_range
    model = Agent(obs_shape, hi - lo + 1, args.hidden, args.net).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, eps=1e-5)
    torch.manual_seed(args.seed + rank)

    rows = args.num_worlds * agents
    T = args.num_steps
    batch = rows * T
    minibatch = batch // args.num_minibatches
    iterations = max(1, args.total_timesteps // (args.num_worlds * T * world_size))
    buf_obs = torch.zeros((T, rows) + obs_shape, device=device)
    buf_act = torch.zeros((T, rows), dtype=torch.long, device=device)
    buf_logp, buf_rew, buf_done, buf_val = (torch.zeros((T, rows), device=device) for _ in range(4))

    writer = None
    if rank == 0 and args.log_dir:
        from torch.utils.tensorboard import SummaryWriter
        name = args.run_name or f"{args.env}_{args.layout if args.env == 'overcooked' else ''}_{args.seed}_{int(time.time())}"
        writer = SummaryWriter(os.path.join(args.log_dir, name))
        writer.add_text("hyperparameters", "\n".join(f"|{k}|{v}|" for k, v in vars(args).items()))
    bar = None
    if rank == 0 and not args.no_progress:
        from tqdm import tqdm
        bar = tqdm(total=iterations * args.num_worlds * T * world_size, unit="step", smoothing=0.05)

    stats = EpisodeStats(args.num_worlds, device)
    obs, _ = env.reset(seed=args.seed + 1000 * rank)
    next_obs = obs.reshape((rows,) + obs_shape).to(device).float()
    next_done = torch.zeros(rows, device=device)
    start, global_step, mean_sparse = time.time(), 0, float("nan")
    history = []
    for it in range(1, iterations + 1):
        frac = (it - 1) / iterations
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - frac) * args.lr
        shaped_coef = max(0.0, 1.0 - frac / args.shaped_anneal) if args.shaped_anneal > 0 else 0.0
        for t in range(T):
            buf_obs[t], buf_done[t] = next_obs, next_done
            with torch.no_grad():
                action, logp, _, value = model.act(next_obs)
            buf_act[t], buf_logp[t], buf_val[t] = action, logp, value
            obs, reward, term, trunc, info = env.step((action + lo).reshape(args.num_worlds, agents))
            info = {k: v.to(device) for k, v in info.items() if k != "final_obs"}
            reward, sparse, shaped_agent = rewards_of(reward.to(device), info, agents)
            done = (term | trunc).to(device)
            stats.update(sparse, shaped_agent.sum(1), done)
            buf_rew[t] = (reward + shaped_coef * shaped_agent).reshape(rows)
            next_obs = obs.reshape((rows,) + obs_shape).to(device).float()
            next_done = done.float().repeat_interleave(agents)
        global_step += args.num_worlds * T * world_size

        with torch.no_grad():  # GAE; an episode end resets the world, so no bootstrap across it
            next_value = model.value(next_obs)
            adv = torch.zeros_like(buf_rew)
            last = torch.zeros(rows, device=device)
            for t in reversed(range(T)):
                nonterminal = 1.0 - (next_done if t == T - 1 else buf_done[t + 1])
                nv = next_value if t == T - 1 else buf_val[t + 1]
                delta = buf_rew[t] + args.gamma * nv * nonterminal - buf_val[t]
                last = delta + args.gamma * args.gae_lambda * nonterminal * last
                adv[t] = last
            returns = adv + buf_val

        b_obs, b_act, b_logp = buf_obs.reshape((-1,) + obs_shape), buf_act.reshape(-1), buf_logp.reshape(-1)
        b_adv, b_ret = adv.reshape(-1), returns.reshape(-1)
        for _ in range(args.update_epochs):
            perm = torch.randperm(batch, device=device)
            for s in range(0, batch, minibatch):
                idx = perm[s:s + minibatch]
                _, logp, entropy, value = model.act(b_obs[idx], b_act[idx])
                ratio = (logp - b_logp[idx]).exp()
                mb_adv = b_adv[idx]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((value - b_ret[idx]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                if world_size > 1:
                    for p in model.parameters():
                        dist.all_reduce(p.grad)
                        p.grad /= world_size
                nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                optimizer.step()

        episodes, sparse_sum, shaped_sum, length_sum = stats.take(world_size)
        sps = global_step / (time.time() - start)
        if episodes > 0:
            mean_sparse = sparse_sum / episodes
            history.append((global_step, time.time() - start, mean_sparse))
        if rank == 0:
            if writer:
                if episodes > 0:
                    writer.add_scalar("charts/episodic_sparse_return", mean_sparse, global_step)
                    writer.add_scalar("charts/episodic_shaped_return", shaped_sum / episodes, global_step)
                    writer.add_scalar("charts/episodic_length", length_sum / episodes, global_step)
                writer.add_scalar("charts/SPS", sps, global_step)
                writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
                writer.add_scalar("charts/shaped_coef", shaped_coef, global_step)
                writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
                writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
                writer.add_scalar("losses/entropy", entropy.mean().item(), global_step)
            if bar:
                bar.update(args.num_worlds * T * world_size)
                bar.set_postfix(sparse_return=f"{mean_sparse:.1f}", sps=f"{sps:,.0f}")
            else:
                print(f"step {global_step} sparse_return {mean_sparse:.2f} sps {sps:,.0f}", flush=True)

    elapsed = time.time() - start
    if rank == 0:
        if bar:
            bar.close()
        print(f"done: {global_step} env steps in {elapsed:.1f} s ({global_step / elapsed:,.0f} steps/s), "
              f"final mean sparse episode return {mean_sparse:.2f}", flush=True)
        if writer:
            writer.close()
        if args.save_model:
            torch.save(model.state_dict(), args.save_model)
        if args.save_policy:
            save_policy(model, args.save_policy)
        if args.video:
            save_video(args, model, device)
    env.close()
    if world_size > 1:
        dist.destroy_process_group()
    return {"mean_sparse_return": mean_sparse, "steps": global_step, "seconds": elapsed, "history": history}


if __name__ == "__main__":
    main()
