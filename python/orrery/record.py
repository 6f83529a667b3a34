"""Recording an episode played by any Python policy into frames and a video.

The policy plays one world here; its actions are then replayed from the same
seed by the native recorder (render/'s orrery-record), which draws every step.
A world's trajectory depends only on its seed and actions, so the replay is the
same episode; the recorder prints its final state hash and this module checks
it against the episode played here.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from typing import Any, Callable, Dict, Optional, Sequence


from orrery.cli import native_tool
from orrery.env import _option_string
from orrery.play import play_episode


def available() -> bool:
    """True when this build ships the recorder (it needs Vulkan at build time)."""
    try:
        native_tool("orrery-record")
        return True
    except (FileNotFoundError, ImportError):
        return False


def record_episode(env_name: str, out_dir: str, policy: Callable[[Any], Any], seed: int = 0,
                   max_steps: Optional[int] = None, size: str = "512x512", fps: int = 10, num_worlds: int = 1,
                   recorder_args: Sequence[str] = (), **env_kwargs: Any) -> Dict[str, Any]:
    """Plays one episode of `env_name` with `policy(obs) -> actions` ([1, agents])
    and writes out_dir/frame_*.png and out_dir/video.mp4 (or video.gif without
    ffmpeg). With num_worlds=N the policy plays worlds 0 .. N - 1 (until world
    0's episode ends) and the frames show them as a grid. `recorder_args` go to
    orrery-record after the others (e.g. ["--camera", "top", "--overlays",
    "vision"]); a later option wins.

    Returns {"steps", "return", "frames_dir", "video", "state_hashes"}. Raises
    RuntimeError if the recorder is missing or its replay does not reproduce
    every world's episode."""
    tool = native_tool("orrery-record")
    played = play_episode(env_name, policy, seed=seed, max_steps=max_steps, num_worlds=num_worlds, **env_kwargs)
    lines, total, expected = played["actions"], played["return"], played["state_hashes"]

    os.makedirs(out_dir, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        actions_file = f.name
    try:
        argv = [tool, env_name, "--worlds", str(num_worlds), "--seed", str(seed), "--actions", actions_file,
                "--out", out_dir, "--size", size, "--fps", str(fps), "--policy", "noop"]
        if num_worlds > 1:
            argv += ["--grid", str(num_worlds)]
        for key, value in env_kwargs.items():
            argv += ["--opt", f"{key}={_option_string(key, value)}"]
        run = subprocess.run(argv + list(recorder_args), capture_output=True, text=True)
    finally:
        os.unlink(actions_file)
    if run.returncode != 0:
        raise RuntimeError(f"orrery-record failed: {run.stderr.strip()}")
    said = {int(w): int(h, 16) for w, h in re.findall(r"world (\d+) state hash after step \d+: ([0-9a-f]{16})",
                                                      run.stdout)}
    if [said.get(w) for w in range(num_worlds)] != list(expected):
        want = ", ".join(f"{h:016x}" for h in expected)
        raise RuntimeError("the recorder's replay did not reproduce the episode "
                           f"(expected state hashes {want}; recorder said: {run.stdout.strip()})")
    video = next((os.path.join(out_dir, v) for v in ("video.mp4", "video.gif")
                  if os.path.exists(os.path.join(out_dir, v))), None)
    return {"steps": len(lines), "return": total, "frames_dir": out_dir, "video": video,
            "state_hashes": list(expected), "recorder_output": run.stdout}
