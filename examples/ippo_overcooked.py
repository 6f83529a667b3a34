"""IPPO self-play on Orrery's Overcooked with rollout and update on the device, CleanRL style: one file.

One policy plays both chefs (shared-parameter IPPO): each (world, chef) pair
is a row of the batch, and each chef sees its own 26-channel lossless grid.
Rollout and update stay on the env's device: on CUDA each iteration is two
CUDA graph replays (the T-step rollout with its env steps, then GAE and every
minibatch update) and one host read of the episode statistics; on the CPU the
same code runs eagerly.

    python examples/ippo_overcooked.py --layout cramped_room            # CUDA when usable
    python examples/ippo_overcooked.py --rules jaxmarl --time-limit 20  # JaxMARL's rules, 20 s
    python examples/ippo_overcooked.py --device cpu --total-timesteps 1500000
    torchrun --nproc_per_node=2 examples/ippo_overcooked.py --device cuda

At the end it prints one line,
``summary: ... first_200_s=... first_200_steps=... final_return=...``, where
first_200_s counts from the process start (the OS's start time of this
process, so imports and the env's start-up are included) and last_1m_return
is the mean return of the run's last million env steps (its plateau once the
learning rate has fallen to 0). --csv writes the
curve (return against wall time and env steps); --tensorboard DIR writes the
same scalars when tensorboard is installed.

Hyperparameters (the defaults; docs/python.md has the measured runs)
--------------------------------------------------------------------
Sample efficiency comes first: the return that counts is what a given number
of env steps buys. The batch per update is the one JaxMARL's IPPO uses on
Overcooked (2,048 env steps, 4,096 agent rows; 16 envs x 128 steps there),
laid out as 64 worlds x 32 steps here: the same data per update, a quarter of
the sequential steps, so a GPU spends a quarter of the time in the rollout.
32 steps with gamma 0.99 / lambda 0.95 (an effective GAE horizon of about 17
steps) bootstrap from the critic, as 128 do. With JaxMARL's own values
(--lr 2.5e-4 --rules jaxmarl) this trainer reached 200 at 0.97 M env steps on
the CPU, beside JaxMARL's 0.85 M (815-891 k over 5 seeds): the same algorithm.

  --lr 1e-3            4x JaxMARL's: the same 16 minibatch steps per update
                       move further. Measured on cramped_room, seed 1: under
                       JaxMARL's rules 200 at 0.36 M env steps (2.5e-4: 0.97 M),
                       best 240; under overcooked_ai's rules 191 at 1.43 M
                       (2.5e-4: 79 at 1.5 M). 2e-3 reached 200 sooner (0.64 M,
                       overcooked_ai's rules) but fell back to 46 and below 200
                       for the rest of the run; 8 epochs at 1e-3 stalled near 190.
                       Annealed linearly to 0 over --anneal-steps (2 M env
                       steps), so a run stopped early follows the same
                       schedule as a long one. On one H200, 45 s runs (6.2 M
                       env steps) of 5 of 5 seeds held 239.5-240.0 over their
                       last million steps (JaxMARL's plateau: 240); annealed
                       over 5 M (JaxMARL's run length) the return still swung
                       between 200 and 240 at 1.5 M.
  --update-epochs 4, --num-minibatches 4
                       16 Adam steps per 2,048 env steps (minibatch 1,024
                       agent rows), advantages normalised per minibatch.
  --clip-coef 0.2      PPO ratio clip; the value loss is clipped the same way
                       (JaxMARL's). Without the value clip (--no-clip-vloss) the
                       critic's large early errors own the shared gradient-norm
                       clip and the policy had learnt nothing at 0.67 M steps.
  --ent-coef 0.01, --vf-coef 0.5, --max-grad-norm 0.5, --gamma 0.99, --gae-lambda 0.95
                       JaxMARL's.
  --shaped-anneal-steps 2.5M
                       the training reward is each chef's row of the team's
                       sparse reward (20 per soup) plus coef x its own shaped
                       reward (overcooked_ai's: 3 for an onion in a pot, 3
                       for a dish picked up, 5 for a soup picked up), coef
                       falling linearly from 1 to 0 over 2.5 M env steps, as
                       overcooked_ai's and JaxMARL's trainers do. The metric
                       is the sparse team return alone.
  --hidden 64          actor and critic are separate 2 x 64 tanh MLPs
                       (orthogonal init; heads 0.01 and 1.0), JaxMARL's.
  --rules              overcooked_ai (the env's defaults: a chef starts a full
                       pot) or jaxmarl (pots start by themselves, JaxMARL's
                       start cells): the comparison with JaxMARL's 0.85 M uses
                       jaxmarl. Under overcooked_ai's rules these defaults are
                       not enough: of 3 seeds one reached 200 (1.2 M env steps)
                       and one served no soup in 2 M (docs/python.md).

The encoder fitted to the grid: the lossless grid is small (4 x 5 cells on
cramped_room, at most 5 x 9 on the classic layouts), so the whole grid
flattened into one dense layer sees every cell with position-specific weights
(520 inputs on cramped_room), and nothing is lost to pooling or a receptive
field. Each channel is scaled to [0, 1] by its declared range (onion counts by
3, the cooking timer by the cook time), so the timer does not outweigh the
0/1 channels at the start of training (a design choice, not measured against
the raw grid: --no-obs-scale gives that).

Sampling uses the Gumbel-max trick (argmax of logits plus Gumbel noise from
torch.rand), which draws from the same categorical distribution as
torch.distributions.Categorical and can be captured in a CUDA graph.
"""

from __future__ import annotations

import time

_IMPORT_TIME = time.time()

import argparse  # noqa: E402
import csv  # noqa: E402
import functools  # noqa: E402
import gc  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402

import numpy as np  # noqa: E402

# The classic layouts of overcooked_ai's papers (the five JaxMARL trains on).
CLASSIC_LAYOUTS = ("cramped_room", "asymmetric_advantages", "coordination_ring", "forced_coordination",
                   "counter_circuit_o_1order")

# --rules: Overcooked options that select a rule set. overcooked_ai's current rules
# need a chef to start a full pot (interact with empty hands); JaxMARL's pots start
# by themselves, as in overcooked_ai's NeurIPS 2019 version (envs/overcooked/README.md).
RULES = {"overcooked_ai": {}, "jaxmarl": {"old_dynamics": "true", "start": "jaxmarl"}}


def process_start_time() -> float:
    """Wall-clock time at which this process started (Linux: from /proc), else this module's import."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return time.time() - uptime + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return _IMPORT_TIME


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layout", default="cramped_room")
    p.add_argument("--rules", choices=sorted(RULES), default="overcooked_ai",
                   help="overcooked_ai: the env's defaults; jaxmarl: pots start cooking by themselves at 3 onions "
                        "and JaxMARL's start cells (what JaxMARL's IPPO trains on)")
    p.add_argument("--env-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="more Overcooked options (after --rules' own)")
    p.add_argument("--num-worlds", type=int, default=64, help="worlds per process")
    p.add_argument("--num-steps", type=int, default=32, help="steps per rollout (T)")
    p.add_argument("--total-timesteps", type=int, default=3_000_000, help="env steps over all processes")
    p.add_argument("--time-limit", type=float, default=0.0,
                   help="stop after this many seconds from process start (0: no limit)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--anneal-steps", type=float, default=2e6, help="env steps over which the lr falls to 0")
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--no-clip-vloss", action="store_true", help="plain squared error for the value loss")
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--shaped-anneal-steps", type=float, default=2.5e6,
                   help="env steps over which the shaped reward's weight falls from 1 to 0")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--no-obs-scale", action="store_true", help="feed the raw grid (no per-channel scaling)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda (cuda:LOCAL_RANK under torchrun), cuda:N")
    p.add_argument("--dist-backend", choices=["auto", "nccl", "gloo"], default="auto",
                   help="torch.distributed backend under torchrun: auto is NCCL on GPUs and Gloo on CPUs; "
                        "gloo on CUDA lets ranks share one GPU (--device cuda:0), which NCCL refuses")
    p.add_argument("--cuda-graph", choices=["auto", "none", "rollout", "all"], default="auto",
                   help="what to capture on CUDA: auto is all in one process, the rollout alone under torchrun")
    p.add_argument("--threads", type=int, default=1, help="env worker threads on the CPU")
    p.add_argument("--torch-threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--target", type=float, default=200.0, help="the return whose first crossing is reported")
    p.add_argument("--csv", default="", help="write the curve here (one row per batch of finished episodes)")
    p.add_argument("--tensorboard", default="", help="TensorBoard folder (needs tensorboard)")
    p.add_argument("--quiet", action="store_true", help="print only the summary")
    return p.parse_args(argv)


def env_options(args) -> dict:
    """The Overcooked options of a run: --layout, --rules' own, then each --env-opt."""
    options = {"layout": args.layout, **RULES[args.rules]}
    for item in args.env_opt:
        key, _, value = item.partition("=")
        options[key] = value
    return options


def make_env(args, device: str, rank: int = 0):
    """The run's Overcooked batch on `device` ("cpu", "cuda:N"), torch tensors."""
    import orrery

    return orrery.make("overcooked", num_worlds=args.num_worlds, device=device, seed=args.seed + 1000 * rank,
                       autoreset="same_step", threads=args.threads, framework="torch", **env_options(args))


class Startup:
    """Start-up in parallel, and where its seconds go.

    Run as a script, the env is made on a thread started before torch is
    imported: the NVIDIA driver's start, the CUDA context, device memory and
    the megakernel loaded from the compile cache (or compiled) run without the
    GIL while the main thread imports torch, and torch then finds the context
    made (both use the device's primary context). The device is guessed before
    torch is there (--device, else cuda:LOCAL_RANK); main() uses the env only
    when the device it settles on is that one, else it closes it and makes
    another (auto on a machine without CUDA, or with a CPU-only torch).
    Python's garbage collector is off until the start-up is over (torch's
    import makes some hundred thousand objects; a collection then only walks
    them), then everything made so far is frozen out of later collections.

    `marks` holds (stage, seconds from process start) in the order reached."""

    def __init__(self, argv=None, early_env=False):
        self.t0 = process_start_time()
        self.marks = [("script", _IMPORT_TIME - self.t0)]
        self.env = self.env_error = None
        self.env_marks = []
        self.thread = None
        self.gc_was_enabled = gc.isenabled()
        if early_env:
            gc.disable()
            self.args = parse_args(argv)
            self.device = early_device(self.args)
            # orrery's import first, alone: on the thread it would share the GIL
            # with torch's import and reach the native start-up several times later.
            import orrery  # noqa: F401

            self.mark("orrery")
            self.thread = threading.Thread(target=self._make_env, name="orrery-make", daemon=True)
            self.thread.start()

    def mark(self, stage: str, at: float | None = None):
        self.marks.append((stage, (time.time() if at is None else at) - self.t0))

    def _make_env(self):
        try:
            started = time.time()
            self.env = make_env(self.args, self.device, int(os.environ.get("RANK", "0")))
            # When the native simulator was up (the env then waits for torch's import to wrap its tensors).
            self.env_marks.append(("env_native", started + self.env.startup_seconds - self.t0))
            self.env_marks.append(("env", time.time() - self.t0))
        except Exception as e:  # noqa: BLE001 (main() makes the env again and reports what fails there)
            self.env_error = e

    def take_env(self, args, device):
        """The env made on the thread, when it was made for these args on `device`; else None."""
        if self.thread is None:
            return None
        self.thread.join()
        self.thread = None
        env, self.env = self.env, None
        if env is not None and (vars(args) != vars(self.args) or env.device != str(device)):
            env.close()
            return None
        return env

    def done(self):
        """Start-up is over: the garbage collector back on, what start-up made frozen out of it."""
        if self.gc_was_enabled and not gc.isenabled():
            gc.freeze()
            gc.enable()

    def fields(self) -> list:
        """(stage, seconds) by time reached, the env thread's stages among them."""
        return sorted(self.marks + self.env_marks, key=lambda m: m[1])

    def line(self, native_s: float) -> str:
        """startup: stage=seconds from process start ..., then env_native_s (how long the simulator took to start)."""
        text = " ".join(f"{name}={at:.2f}" for name, at in self.fields())
        return f"startup: {text} env_native_s={native_s:.2f}"


def early_device(args) -> str:
    """The env's device before torch is imported: --device, else this rank's GPU."""
    if args.device == "cpu" or args.device.startswith("cuda:"):
        return args.device
    return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"


# As a script: the env starts on a thread now, while torch imports (Startup).
_STARTUP = Startup(early_env=True) if __name__ == "__main__" else None

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

if _STARTUP is not None:
    _STARTUP.mark("torch")


def setup_distributed(args):
    """(rank, world_size, device); one process per GPU under torchrun (NCCL), Gloo on the CPU.
    --device cuda:N puts every rank on GPU N; NCCL refuses two ranks on one GPU,
    so that takes --dist-backend gloo (Gloo all-reduces CUDA tensors through the host)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "auto":
        use_cuda = torch.cuda.is_available()
    else:
        use_cuda = args.device.startswith("cuda")
    if use_cuda:
        device = torch.device(args.device if args.device.startswith("cuda:") else f"cuda:{local}")
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    if world > 1:
        import torch.distributed as dist

        backend = args.dist_backend if args.dist_backend != "auto" else ("nccl" if use_cuda else "gloo")
        if backend == "nccl" and not use_cuda:
            raise SystemExit("--dist-backend nccl needs --device cuda; the CPU's backend is gloo")
        dist.init_process_group(backend=backend)
    return rank, world, device


def dense(i, o, std=math.sqrt(2)):
    m = nn.Linear(i, o)
    nn.init.orthogonal_(m.weight, std)
    nn.init.zeros_(m.bias)
    return m


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs over one chef's flattened, channel-scaled grid."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: int):
        super().__init__()
        self.actor = nn.Sequential(dense(obs_dim, hidden), nn.Tanh(), dense(hidden, hidden), nn.Tanh(),
                                   dense(hidden, num_actions, std=0.01))
        self.critic = nn.Sequential(dense(obs_dim, hidden), nn.Tanh(), dense(hidden, hidden), nn.Tanh(),
                                    dense(hidden, 1, std=1.0))

    def forward(self, x):
        return self.actor(x), self.critic(x).squeeze(-1)


class Adam:
    """Adam (Kingma and Ba, 2015) with torch.optim.Adam's arithmetic and
    defaults (betas 0.9, 0.999; eps added after the bias-corrected square
    root), written here because making any torch.optim optimiser imports
    torch._dynamo (torch.compile's machinery, unused here) on its first call:
    2.6-3.4 s on the development machine, on the critical path of the start-up.

    capturable=False: on the CPU, torch.optim.Adam's update bit for bit (its
    single-tensor path; tests/python/test_ippo_example.py compares them).
    capturable=True (CUDA): the learning rate and the step count are device
    tensors and every parameter moves in a few foreach kernels, so a step
    captured in a CUDA graph reads the annealed rate and counts on each replay."""

    def __init__(self, params, lr: float, eps: float, capturable: bool, betas=(0.9, 0.999)):
        self.params = list(params)
        self.beta1, self.beta2 = betas
        self.eps, self.capturable = eps, capturable
        device = self.params[0].device
        self.lr = torch.tensor(float(lr), device=device) if capturable else float(lr)
        self.steps = torch.zeros((), device=device) if capturable else 0
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]

    def set_lr(self, lr: float):
        if self.capturable:
            self.lr.fill_(lr)
        else:
            self.lr = float(lr)

    def zero_grad(self):
        """Zeroes the gradients in place (their addresses stay: a captured backward writes there)."""
        grads = [p.grad for p in self.params if p.grad is not None]
        if self.capturable and grads:
            torch._foreach_zero_(grads)
        else:
            for g in grads:
                g.zero_()

    @torch.no_grad()
    def step(self):
        b1, b2 = self.beta1, self.beta2
        grads = [p.grad for p in self.params]
        if not self.capturable:
            self.steps += 1
            t = float(self.steps)
            step_size = self.lr / (1 - b1**t)
            bias2_sqrt = (1 - b2**t) ** 0.5
            for p, g, m, v in zip(self.params, grads, self.exp_avg, self.exp_avg_sq):
                m.lerp_(g, 1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                p.addcdiv_(m, (v.sqrt() / bias2_sqrt).add_(self.eps), value=-step_size)
            return
        self.steps += 1
        torch._foreach_lerp_(self.exp_avg, grads, 1 - b1)
        torch._foreach_mul_(self.exp_avg_sq, b2)
        torch._foreach_addcmul_(self.exp_avg_sq, grads, grads, value=1 - b2)
        step_size = self.lr / (1 - torch.pow(b1, self.steps))
        bias2_sqrt = (1 - torch.pow(b2, self.steps)).sqrt()
        denom = torch._foreach_sqrt(self.exp_avg_sq)
        torch._foreach_div_(denom, bias2_sqrt)
        torch._foreach_add_(denom, self.eps)
        update = torch._foreach_div(self.exp_avg, denom)
        torch._foreach_mul_(update, step_size)
        torch._foreach_sub_(self.params, update)


def channel_scale(env) -> torch.Tensor:
    """1 / the largest value of each of the grid's channels (from the env's channel names)."""
    names = env.obs_names or ()
    info = env.env_info
    cook = float(info.get("option.cook_time", "20"))
    big = {"onions_in_pot": 3, "tomatoes_in_pot": 3, "onions_in_soup": 3, "tomatoes_in_soup": 3,
           "soup_cook_time_remaining": cook}
    return torch.tensor([1.0 / big.get(n, 1.0) for n in names], dtype=torch.float32)


def on_env_stream(method):
    """Runs a Trainer method with torch's current stream set to the env's own (CUDA):
    the policy, the update and the engine share one stream, so env.step() orders
    nothing and a graph captured there holds no events between streams. A caller
    reading the trainer's tensors on another stream synchronises first."""

    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        if not self.cuda:
            return method(self, *args, **kwargs)
        with torch.cuda.stream(self.env.stream):
            return method(self, *args, **kwargs)

    return wrapped


class Trainer:
    """The state of one run: env, model, optimiser, fixed-address buffers, and the
    three steps of an iteration (rollout, advantages, update)."""

    def __init__(self, args, rank=0, world_size=1, device=torch.device("cpu"), env=None):
        """env: the run's env when already made (make_env(args, str(device), rank)), else made here."""
        self.args, self.rank, self.world_size, self.device = args, rank, world_size, device
        self.cuda = device.type == "cuda"
        if args.torch_threads:
            torch.set_num_threads(args.torch_threads)
        self.env = env if env is not None else make_env(args, str(device) if self.cuda else "cpu", rank)
        env = self.env
        self.N, self.A = args.num_worlds, env.num_agents
        self.R, self.T = self.N * self.A, args.num_steps
        self.obs_shape = tuple(env.obs.shape[2:])
        self.D = int(np.prod(self.obs_shape))
        self.lo, hi = env.action_range
        torch.manual_seed(args.seed)  # identical initial weights on every rank
        self.model = ActorCritic(self.D, hi - self.lo + 1, args.hidden).to(device)
        if world_size > 1:
            import torch.distributed as dist

            for p in self.model.parameters():
                dist.broadcast(p.data, 0)
        self.params = list(self.model.parameters())
        # On CUDA the learning rate and the step count are device tensors, so a
        # captured optimiser step reads the annealed rate and counts its steps.
        self.opt = Adam(self.params, args.lr, eps=1e-5, capturable=self.cuda)
        torch.manual_seed(args.seed + 7919 * (rank + 1))  # sampling differs per rank

        scale = torch.ones(self.obs_shape[0]) if args.no_obs_scale else channel_scale(env)
        self.scale = scale.view(-1, *([1] * (len(self.obs_shape) - 1))).expand(self.obs_shape).reshape(-1).to(device)
        f32 = dict(device=device, dtype=torch.float32)
        T, R = self.T, self.R
        self.obs_buf = torch.zeros((T, R, self.D), **f32)
        self.act_buf = torch.zeros((T, R), device=device, dtype=torch.long)
        self.logp_buf, self.val_buf, self.rew_buf, self.done_buf = (torch.zeros((T, R), **f32) for _ in range(4))
        self.adv = torch.zeros((T, R), **f32)
        self.ret = torch.zeros((T, R), **f32)
        self.next_obs = torch.zeros((R, self.D), **f32)
        self.shaped_coef = torch.ones((), **f32)
        # Per-world running returns, and [episodes, sparse, shaped] summed over finished episodes.
        self.ep_sparse = torch.zeros(self.N, **f32)
        self.ep_shaped = torch.zeros(self.N, **f32)
        self.totals = torch.zeros(3, **f32)
        # Sums over the minibatch steps of an update: [policy loss, value loss, entropy, approx kl, steps].
        self.losses = torch.zeros(5, **f32)
        self.batch = T * R
        self.minibatch = self.batch // args.num_minibatches
        self.graphs = None

        if self.cuda:  # what was made on torch's stream above comes before the env stream's work
            env.stream.wait_stream(torch.cuda.current_stream(device))
        self._reset(args.seed + 1000 * rank)

    @on_env_stream
    def _reset(self, seed):
        obs, _ = self.env.reset(seed=seed)
        self.next_obs.copy_(obs.reshape(self.R, self.D)).mul_(self.scale)

    # ----- one iteration ---------------------------------------------------

    def _sample(self, logits):
        """Gumbel-max: a categorical sample, with its log-probability."""
        u = torch.rand(logits.shape, device=logits.device)
        action = (logits - torch.log(-torch.log(u))).argmax(-1)
        logp = torch.log_softmax(logits, -1).gather(-1, action.unsqueeze(-1)).squeeze(-1)
        return action, logp

    def rollout(self):
        """T env steps with the current policy; fills the buffers. No host synchronisation on CUDA."""
        env, N, A, R, D = self.env, self.N, self.A, self.R, self.D
        x = self.next_obs
        with torch.no_grad():
            for t in range(self.T):
                self.obs_buf[t].copy_(x)
                logits, value = self.model(x)
                action, logp = self._sample(logits)
                self.act_buf[t].copy_(action)
                self.logp_buf[t].copy_(logp)
                self.val_buf[t].copy_(value)
                acts = action.view(N, A).to(torch.int32)
                if self.lo:
                    acts += self.lo
                obs, reward, term, trunc, info = env.step(acts if self.cuda else acts.numpy())
                done = (term | trunc).to(torch.float32)
                shaped = info["shaped_r_by_agent"]
                self.rew_buf[t].copy_((reward + self.shaped_coef * shaped).view(R))
                self.done_buf[t].copy_(done.repeat_interleave(A))
                self.ep_sparse += info["sparse_r_by_agent"].sum(1)
                self.ep_shaped += shaped.sum(1)
                self.totals += torch.stack([done.sum(), (self.ep_sparse * done).sum(), (self.ep_shaped * done).sum()])
                keep = 1.0 - done
                self.ep_sparse *= keep
                self.ep_shaped *= keep
                x.copy_(obs.reshape(R, D)).mul_(self.scale)

    def advantages(self):
        """GAE over the rollout; an episode end resets the world, so nothing bootstraps across it."""
        a = self.args
        with torch.no_grad():
            next_value = self.model.critic(self.next_obs).squeeze(-1)
            last = torch.zeros_like(next_value)
            for t in reversed(range(self.T)):
                nonterminal = 1.0 - self.done_buf[t]
                nv = next_value if t == self.T - 1 else self.val_buf[t + 1]
                delta = self.rew_buf[t] + a.gamma * nv * nonterminal - self.val_buf[t]
                last = delta + a.gamma * a.gae_lambda * nonterminal * last
                self.adv[t].copy_(last)
            torch.add(self.adv, self.val_buf, out=self.ret)

    def _all_reduce_grads(self):
        import torch.distributed as dist

        flat = torch.cat([p.grad.reshape(-1) for p in self.params])
        dist.all_reduce(flat)
        flat /= self.world_size
        offset = 0
        for p in self.params:
            n = p.numel()
            p.grad.copy_(flat[offset:offset + n].view_as(p.grad))
            offset += n

    def update(self):
        """update_epochs passes over the batch in num_minibatches shuffled minibatches."""
        a = self.args
        b_obs, b_act = self.obs_buf.view(self.batch, self.D), self.act_buf.view(-1)
        b_logp, b_val = self.logp_buf.view(-1), self.val_buf.view(-1)
        b_adv, b_ret = self.adv.view(-1), self.ret.view(-1)
        mb = self.minibatch
        for _ in range(a.update_epochs):
            # argsort of uniform noise: a random permutation that a CUDA graph can capture
            perm = torch.rand(self.batch, device=self.device).argsort()
            for k in range(a.num_minibatches):
                idx = perm[k * mb:(k + 1) * mb]
                logits, value = self.model(b_obs[idx])
                logp_all = torch.log_softmax(logits, -1)
                logp = logp_all.gather(-1, b_act[idx].unsqueeze(-1)).squeeze(-1)
                entropy = -(logp_all.exp() * logp_all).sum(-1).mean()
                log_ratio = logp - b_logp[idx]
                ratio = log_ratio.exp()
                adv = b_adv[idx]
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - a.clip_coef, 1 + a.clip_coef)).mean()
                ret, old_v = b_ret[idx], b_val[idx]
                if a.no_clip_vloss:
                    v_loss = 0.5 * ((value - ret) ** 2).mean()
                else:
                    v_clipped = old_v + (value - old_v).clamp(-a.clip_coef, a.clip_coef)
                    v_loss = 0.5 * torch.max((value - ret) ** 2, (v_clipped - ret) ** 2).mean()
                loss = pg_loss - a.ent_coef * entropy + a.vf_coef * v_loss
                self.opt.zero_grad()
                loss.backward()
                if self.world_size > 1:
                    self._all_reduce_grads()
                nn.utils.clip_grad_norm_(self.params, a.max_grad_norm, foreach=self.cuda or None)
                self.opt.step()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - log_ratio).mean()
                    self.losses += torch.stack([pg_loss.detach(), v_loss.detach(), entropy.detach(), approx_kl,
                                                torch.ones((), device=self.device)])

    @on_env_stream
    def iteration(self):
        """One rollout and one update: two graph replays once captured, else eager."""
        if self.graphs is not None:
            for g in self.graphs:
                g.replay()
            if len(self.graphs) == 1:  # the rollout alone is captured
                self.advantages()
                self.update()
            return
        self.rollout()
        self.advantages()
        self.update()

    @on_env_stream
    def set_schedule(self, global_step: int):
        a = self.args
        frac = max(0.0, 1.0 - global_step / a.anneal_steps) if a.anneal_steps > 0 else 1.0
        coef = max(0.0, 1.0 - global_step / a.shaped_anneal_steps) if a.shaped_anneal_steps > 0 else 0.0
        self.opt.set_lr(a.lr * frac)
        self.shaped_coef.fill_(coef)
        return a.lr * frac, coef

    @on_env_stream
    def capture(self, mode: str):
        """Captures the rollout (and, for mode "all", advantages + update) in CUDA graphs
        on the env's stream. Call after at least one eager iteration on that stream
        (torch's warm-up: the optimiser's state and the grads exist, libraries are loaded)."""
        graphs = []
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=self.env.stream):
            self.rollout()
        graphs.append(g)
        if mode == "all":
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=self.env.stream):
                self.advantages()
                self.update()
            graphs.append(g)
        self.graphs = graphs

    @on_env_stream
    def take_stats(self):
        """[episodes, sparse sum, shaped sum] and the loss sums over all ranks; zeroes them (one host read)."""
        both = torch.cat([self.totals, self.losses])
        if self.world_size > 1:
            import torch.distributed as dist

            dist.all_reduce(both)
        values = both.tolist()
        self.totals.zero_()
        self.losses.zero_()
        return values[:3], values[3:]

    @on_env_stream
    def rank_spread(self) -> float:
        """Largest difference of any weight between ranks (0 when the gradient all-reduce kept them equal)."""
        import torch.distributed as dist

        flat = torch.cat([p.detach().reshape(-1) for p in self.params])
        hi, lo = flat.clone(), flat.clone()
        dist.all_reduce(hi, op=dist.ReduceOp.MAX)
        dist.all_reduce(lo, op=dist.ReduceOp.MIN)
        return float((hi - lo).max())

    def close(self):
        self.env.close()


def tail_return(history, global_step: int, steps: int = 1_000_000) -> float:
    """The mean sparse return of the rows in the run's last `steps` env steps
    (every row when the run is shorter): the plateau a long run settles on."""
    tail = [r for s, _, r in history if s > global_step - steps]
    return sum(tail) / len(tail) if tail else float("nan")


class Log:
    """CSV and (optional) TensorBoard scalars, written by rank 0."""

    FIELDS = ("wall_s", "train_s", "env_steps", "sparse_return", "shaped_return", "episodes", "sps",
              "policy_loss", "value_loss", "entropy", "approx_kl", "lr", "shaped_coef")

    def __init__(self, args, enabled):
        self.file = self.writer = None
        if not enabled:
            return
        if args.csv:
            os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
            self.file = open(args.csv, "w", newline="")
            self.csv = csv.writer(self.file)
            self.csv.writerow(self.FIELDS)
        if args.tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                print("--tensorboard: tensorboard is not installed; no scalars written (the CSV has them)",
                      file=sys.stderr)
            else:
                self.writer = SummaryWriter(args.tensorboard)

    def row(self, values):
        if self.file:
            self.csv.writerow([f"{v:.6g}" if isinstance(v, float) else v for v in values])
            self.file.flush()
        if self.writer:
            step = values[2]
            for name, value in zip(self.FIELDS, values):
                if name not in ("env_steps", "wall_s"):
                    self.writer.add_scalar(f"overcooked/{name}", value, step)
            self.writer.add_scalar("overcooked/sparse_return_vs_wall_s", values[3], int(values[0] * 1000))

    def close(self):
        if self.file:
            self.file.close()
        if self.writer:
            self.writer.close()


def main(argv=None):
    startup = _STARTUP if argv is None and _STARTUP is not None else Startup()
    t_process = startup.t0
    args = parse_args(argv)
    rank, world_size, device = setup_distributed(args)
    startup.mark("device")
    env = startup.take_env(args, device)
    if env is None:
        env = make_env(args, str(device) if device.type == "cuda" else "cpu", rank)
        startup.mark("env")
    trainer = Trainer(args, rank, world_size, device, env=env)
    startup.mark("model")
    per_iter = args.num_worlds * args.num_steps * world_size
    iterations = max(1, args.total_timesteps // per_iter)
    mode = args.cuda_graph
    if mode == "auto":
        mode = ("all" if world_size == 1 else "rollout") if trainer.cuda else "none"
    if not trainer.cuda:
        mode = "none"
    log = Log(args, rank == 0)
    t_train = time.time()
    global_step, history, first = 0, [], None
    mean_sparse = float("nan")
    loss_means = [float("nan")] * 4
    it = 0
    while it < iterations:
        lr, coef = trainer.set_schedule(global_step)
        if mode != "none" and trainer.graphs is None and it >= 1:
            try:
                trainer.capture(mode)
            except Exception as e:  # a torch or driver without capture of some op: train eagerly
                trainer.graphs = None
                mode = "none"
                if rank == 0:
                    print(f"cuda graph capture failed ({type(e).__name__}: {e}); training eagerly", file=sys.stderr)
        if it == 1 and trainer.graphs is not None:
            startup.mark("captured")
        trainer.iteration()
        it += 1
        global_step += per_iter
        (episodes, sparse_sum, shaped_sum), losses = trainer.take_stats()
        now = time.time()
        if it == 1:
            startup.mark("first_iteration", now)
        if it == 1 + (mode != "none"):  # the first iteration, and the captures when there are any
            startup.done()
        if losses[4] > 0:
            loss_means = [v / losses[4] for v in losses[:4]]
        if episodes > 0:
            mean_sparse = sparse_sum / episodes
            history.append((global_step, now - t_process, mean_sparse))
            if first is None and mean_sparse >= args.target:
                first = (now - t_process, global_step)
            if rank == 0:
                if len(history) == 1:
                    startup.mark("first_row", now)
                    print(startup.line(trainer.env.startup_seconds), flush=True)
                sps = global_step / (now - t_train)
                log.row([now - t_process, now - t_train, global_step, mean_sparse, shaped_sum / episodes,
                         int(episodes), sps] + loss_means + [lr, coef])
                if not args.quiet:
                    print(f"{now - t_process:7.1f} s  {global_step:>10,} steps  return {mean_sparse:6.1f}  "
                          f"shaped {shaped_sum / episodes:6.1f}  {sps:,.0f} steps/s", flush=True)
        if args.time_limit and it < iterations:
            stop = torch.tensor([float(time.time() - t_process >= args.time_limit)])
            if world_size > 1:
                import torch.distributed as dist

                dist.all_reduce(stop)
            if stop.item() > 0:
                break
    elapsed = time.time() - t_train
    startup.done()
    if rank == 0 and not history:
        print(startup.line(trainer.env.startup_seconds), flush=True)
    spread = trainer.rank_spread() if world_size > 1 else 0.0
    if rank == 0:
        f_s, f_steps = (f"{first[0]:.2f}", str(first[1])) if first else ("none", "none")
        print(f"summary: layout={args.layout} rules={args.rules} seed={args.seed} device={device} graphs={mode} "
              f"first_{args.target:g}_s={f_s} first_{args.target:g}_steps={f_steps} final_return={mean_sparse:.1f} "
              f"best_return={max([r for _, _, r in history], default=float('nan')):.1f} "
              f"last_1m_return={tail_return(history, global_step):.1f} steps={global_step} "
              f"train_s={elapsed:.1f} total_s={time.time() - t_process:.1f} sps={global_step / elapsed:,.0f}"
              + (f" ranks={world_size} rank_weight_spread={spread:g}" if world_size > 1 else ""), flush=True)
    log.close()
    trainer.close()
    if world_size > 1:
        import torch.distributed as dist

        # Every rank is done with the group before any tears it down: a rank
        # that exits while its peer is still closing its Gloo connections can
        # abort in the transport's teardown (seen once in CI, rank 0, SIGABRT).
        dist.barrier()
        dist.destroy_process_group()
    return {"mean_sparse_return": mean_sparse, "steps": global_step, "seconds": elapsed, "history": history,
            "first": first, "losses": loss_means, "graphs": mode, "rank_weight_spread": spread,
            "startup": dict(startup.fields())}


if __name__ == "__main__":
    main()
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # Under torchrun, once main() has closed the env and the log and destroyed
        # the process group, leave without the interpreter's teardown: Gloo's
        # transport threads have aborted there once in CI (rank 0, after the
        # summary) though every rank had finished. An error in main() still
        # raises before this line and exits non-zero.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
