"""The `orrery` command: listing envs, forwarding bench to the native tool,
and the subcommand registry other parts of Orrery extend."""

import json
import os
import subprocess
import sys

import pytest

import orrery
from orrery import cli


def run(*args):
    return subprocess.run([sys.executable, "-m", "orrery", *args], capture_output=True, text=True, timeout=120)


def test_envs_lists_every_registered_env():
    out = run("envs")
    assert out.returncode == 0, out.stderr
    names = [line.split()[0] for line in out.stdout.splitlines()]
    assert names == orrery.list_envs()


def test_bench_runs_the_native_tool(tmp_path):
    assert os.access(cli.native_tool(), os.X_OK)
    report = tmp_path / "bench.json"
    out = run("bench", "tag", "--device", "cpu", "--worlds", "16", "--steps", "20", "--threads", "1",
              "--json", str(report))
    assert out.returncode == 0, out.stderr
    assert "env-steps/s" in out.stdout and "tag" in out.stdout
    assert '"env": "tag"' in report.read_text()


def test_bench_records_where_actions_come_from(tmp_path):
    # On the CPU the default copies pre-drawn actions; --actions device draws them in the step.
    records = {}
    for mode in ("auto", "device"):
        report = tmp_path / f"{mode}.json"
        out = run("bench", "overcooked", "--device", "cpu", "--worlds", "8", "--steps", "10", "--threads", "1",
                  "--actions", mode, "--json", str(report))
        assert out.returncode == 0, out.stderr
        records[mode] = json.loads(report.read_text())[0]
    assert records["auto"]["actions"] == "host"
    assert records["device"]["actions"] == "device"
    assert records["auto"]["layout"] == "cramped_room"  # the default layout is named too
    bad = run("bench", "overcooked", "--device", "cpu", "--actions", "sometimes")
    assert bad.returncode != 0 and "--actions expects auto, host or device, got 'sometimes'" in bad.stderr


def test_bench_takes_a_layout(tmp_path):
    report = tmp_path / "layout.json"
    out = run("bench", "overcooked", "--layout", "counter_circuit_o_1order", "--device", "cpu", "--worlds", "4",
              "--steps", "4", "--threads", "1", "--json", str(report))
    assert out.returncode == 0, out.stderr
    record = json.loads(report.read_text())[0]
    assert record["layout"] == "counter_circuit_o_1order"
    # counter_circuit is 8 x 5: two chefs' 26-channel observations are 2,080 bytes a world.
    assert record["bytes_moved_per_step"] >= 4 * 2080
    bad = run("bench", "overcooked", "--layuot", "cramped_room")
    assert bad.returncode == 2 and "unknown option '--layuot'" in bad.stderr


def test_native_errors_keep_their_exit_code():
    out = run("bench", "no_such_env", "--device", "cpu", "--worlds", "4", "--steps", "2")
    assert out.returncode == 1 and "unknown env 'no_such_env'" in out.stderr


def test_usage_without_a_command():
    out = run()
    assert out.returncode == 2 and "envs" in out.stdout and "bench" in out.stdout


def test_registry_accepts_new_subcommands(capsys):
    seen = []

    @cli.subcommand("hello-test", "say hello", lambda p: p.add_argument("--name", default="world"))
    def hello(args):
        seen.append(args.name)
        return 0

    try:
        assert cli.main(["hello-test", "--name", "orrery"]) == 0
        assert seen == ["orrery"]
        with pytest.raises(ValueError, match="registered twice"):
            cli.register(cli.Command("hello-test", "again", hello))
    finally:
        cli._COMMANDS.pop("hello-test")


@pytest.mark.skipif(not cli._has_tool("orrery-record"), reason="this build has no recorder (render/ needs Vulkan)")
def test_record_forwards_to_the_recorder(tmp_path):
    out = run("record", "tag", "--steps", "2", "--size", "64x64", "--out", str(tmp_path / "clip"))
    assert out.returncode == 0, out.stderr
    frames = sorted(p.name for p in (tmp_path / "clip").glob("frame_*.png"))
    assert frames == ["frame_00000.png", "frame_00001.png", "frame_00002.png"]


def test_view_and_record_are_listed_only_when_shipped():
    usage = run().stdout
    assert ("record" in usage) == cli._has_tool("orrery-record")
    assert ("view" in usage) == cli._has_tool("orrery-view")


def test_kernels_compiles_an_envs_gpu_programs_without_a_gpu(tmp_path):
    """`orrery kernels ENV` (the native tool): every per-node program of the
    env compiled by NVRTC here, each line's bytes its cubin's machine code
    and its kernel's registers a thread, the total their sum, --out writing
    each cubin and its source; --node keeps one node's programs."""
    tool = cli.native_tool()
    out = subprocess.run([tool, "kernels", "tag", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    if out.returncode != 0 and "cannot load NVRTC" in out.stderr:
        pytest.skip("NVRTC is not installed here")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("tag: sm_90, ")
    rows = [line.split() for line in lines[1:] if "instructions" in line and not line.lstrip().startswith("all ")]
    total = [line.split() for line in lines if line.lstrip().startswith("all ")]
    assert rows and len(total) == 1
    bytes_of = {}
    for r in rows:
        kernel = r[r.index("instructions") + 1].strip("(,")
        n = int(r[r.index("bytes") - 1])
        assert n > 0 and int(r[r.index("instructions") - 1]) == n // 16
        registers = int(r[r.index("registers,") - 1])  # the kernel's, from its cubin's .nv.info
        assert 0 < registers <= 255
        bytes_of[kernel] = n
        cubin = (tmp_path / f"{kernel}.cubin").read_bytes()
        assert cubin[:4] == b"\x7fELF"  # what NVRTC made, written as is
        source = (tmp_path / f"{kernel}.cu").read_text()  # the program NVRTC compiled, beside it
        assert "__global__ void" in source and f" {kernel}(" in source
    assert "orrery_step_op0" in bytes_of and any(k.startswith("orrery_reset_op") for k in bytes_of)
    assert int(total[0][1]) == sum(bytes_of.values())
    one = subprocess.run([tool, "kernels", "tag", "--node", "observe"], capture_output=True, text=True, timeout=300)
    assert one.returncode == 0, one.stderr
    kept = [line for line in one.stdout.splitlines()[1:] if "instructions" in line and "all " not in line]
    assert kept and all(line.split()[0] == "observe" for line in kept)
    # An env's register bound reaches the machine code: hide-and-seek's
    # observation under EnvSpec::bound_registers(node, 64), 71 unbounded.
    bounded = subprocess.run(
        [tool, "kernels", "hide_and_seek", "--node", "observe"], capture_output=True, text=True, timeout=300
    )
    assert bounded.returncode == 0, bounded.stderr
    observe = [line.split() for line in bounded.stdout.splitlines() if line.split()[:1] == ["observe"]]
    assert observe and all(r[r.index("registers,") - 1] == "64" for r in observe), bounded.stdout
    bad = subprocess.run([tool, "kernels", "tag", "overcooked"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "orrery kernels takes one env, got 2" in bad.stderr
