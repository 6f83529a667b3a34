"""Issue 19: files, snapshots, state dicts and options as untrusted input, from
Python. Each test reproduces one finding of the robustness audit; the last one
is a bounded fuzz of the public API checking that every rejection leaves the
simulator exactly as it was."""

import json
import os
import random
import struct
import zlib

import numpy as np
import pytest

import orrery


def hashes(env):
    return [env.state_hash(w) for w in range(env.num_worlds)]


@pytest.fixture
def kitchen():
    env = orrery.make("overcooked", num_worlds=2, device="cpu", seed=1, threads=1)
    env.step(np.zeros((2, 2), np.int64))
    yield env
    env.close()


def test_forged_checkpoint_payload_length_is_refused(tmp_path, kitchen):  # finding 1
    path = tmp_path / "a.ckpt"
    kitchen.save_checkpoint(path)
    data = path.read_bytes()
    (header_len,) = struct.unpack_from("<I", data, 12)
    body = data[:16 + header_len] + struct.pack("<Q", 0)
    path.write_bytes(body + struct.pack("<I", zlib.crc32(body)))
    before = hashes(kitchen)
    with pytest.raises(ValueError, match="payload length 0"):
        kitchen.load_checkpoint(path)
    assert hashes(kitchen) == before


def test_crafted_snapshot_is_refused(kitchen):  # finding 2
    snap = bytearray(kitchen.save_world(0))
    # The chef's cell is the first byte of the Chef table's Player column: find it by
    # comparing snapshots that differ only in the chef's position.
    state = kitchen.get_state(0)
    state["players"][0]["position"] = [2, 2] if state["players"][0]["position"] != [2, 2] else [1, 2]
    kitchen.set_state(1, state)
    other = kitchen.save_world(1)
    kitchen.restore_world(1, bytes(snap))
    at = next(i for i in range(len(snap)) if snap[i] != other[i])
    snap[at] = 255
    before = hashes(kitchen)
    with pytest.raises(ValueError, match="Player.cell = 255"):
        kitchen.restore_world(1, bytes(snap))
    assert hashes(kitchen) == before


@pytest.mark.parametrize("path", ["/dev/zero", "/tmp"])
def test_only_regular_files_are_read(path, kitchen):  # finding 6
    with pytest.raises(ValueError, match="not a regular file"):
        kitchen.load_checkpoint(path)
    with pytest.raises(ValueError, match="not a regular file"):
        orrery.make("overcooked", num_worlds=1, device="cpu", layout_file=path)


def test_fifo_is_refused_without_blocking(tmp_path):  # finding 6
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        orrery.make("overcooked", num_worlds=1, device="cpu", layout_file=str(fifo))


def test_checkpoint_with_other_options_names_the_option(tmp_path):  # finding 7
    path = tmp_path / "h.ckpt"
    orrery.make("overcooked", num_worlds=1, device="cpu", horizon=50).save_checkpoint(path)
    env = orrery.make("overcooked", num_worlds=1, device="cpu")
    with pytest.raises(ValueError, match="env option horizon differs: the file was written with horizon=50"):
        env.load_checkpoint(path)


def test_non_utf8_bytes_keep_the_message(tmp_path, kitchen):  # finding 9
    layout = tmp_path / "bad.layout"
    layout.write_bytes(b'{"grid": """XXPXX\nO  \xff2X\nX1  X\nXDXSX"""}')
    with pytest.raises(ValueError, match="invalid UTF-8 byte"):
        orrery.make("overcooked", num_worlds=1, device="cpu", layout_file=str(layout))
    # The grid check quotes one byte of a two-byte character: the message must survive.
    with pytest.raises(ValueError, match=r"unknown symbol '\\xc3'"):
        orrery.make("overcooked", num_worlds=1, device="cpu", layout_grid="XXPXXX|O 1éX|X  2 X|XDXSXX")
    before = hashes(kitchen)
    with pytest.raises(ValueError, match="not UTF-8"):
        kitchen.set_state(0, b'{"players": "\xff"}')
    assert hashes(kitchen) == before


def test_nul_bytes_in_paths_are_refused(tmp_path, kitchen):  # finding 11
    with pytest.raises(ValueError, match="NUL byte"):
        kitchen.save_checkpoint(str(tmp_path / "a\0b"))
    with pytest.raises(ValueError, match="NUL byte"):
        orrery.make("overcooked", num_worlds=1, device="cpu", layout_file="x\0y")


def test_host_view_of_an_unknown_tensor_is_a_value_error(kitchen):  # finding 12
    with pytest.raises(ValueError, match="no tensor named 'nope'"):
        kitchen.host_view("nope")


def test_missing_framework_is_refused_at_make(monkeypatch):  # finding 12
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(ValueError, match="framework='torch' needs the package 'torch'"):
        orrery.make("tag", num_worlds=1, device="cpu", framework="torch")


def test_tensor_view_shape_overflow_is_refused(kitchen):  # finding 13
    t = kitchen._sim.tensors()["obs"]
    with pytest.raises(ValueError, match="overflows"):
        t.view(t.dtype, [2**62 + 1040, 4])


# ----- a bounded fuzz of the public API --------------------------------------

def _mutate(rng, value):
    """A random structural change to a JSON-like value."""
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(list(value))
        out = dict(value)
        choice = rng.random()
        if choice < 0.3:
            del out[key]
        else:
            out[key] = _mutate(rng, value[key])
        return out
    if isinstance(value, list) and value and rng.random() < 0.7:
        out = list(value)
        i = rng.randrange(len(out))
        if rng.random() < 0.2:
            del out[i]
        else:
            out[i] = _mutate(rng, out[i])
        return out
    return rng.choice([None, True, -1, 0, 1, 2, 3, 7, 255, 2**31, 2**32 + 5, -2**63, 1.5, float("inf"), "",
                       "onion", "soup", "tomato", "dish", [], {}, [0, 0], [1, 1], [-1, 0], [99, 1],
                       {"name": "soup", "position": [2, 0], "_ingredients": [{"name": "onion"}]}])


def _try(env, action):
    """Runs one public call; a rejection must leave every world as it was."""
    before = hashes(env)
    try:
        action()
    except (ValueError, TypeError) as e:
        assert str(e), "an error without a message"
        assert hashes(env) == before, f"rejected input changed the simulator: {e}"
        return False
    return True


def _changed(rng, good: bytes, most: int) -> bytes:
    """`good` with 1 to most - 1 random bytes set to random values."""
    data = bytearray(good)
    for _ in range(rng.randrange(1, most)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def _forged(rng, good_ckpt: bytes) -> bytes:
    """A checkpoint with 1 or 2 bytes of its body changed and its CRC made to match."""
    data = _changed(rng, good_ckpt[:-4], 3)
    return data + struct.pack("<I", zlib.crc32(data))


def test_public_api_fuzz_rejections_leave_state_untouched(tmp_path):
    rng = random.Random(19)
    env = orrery.make("overcooked", num_worlds=3, device="cpu", seed=4, threads=1)
    tag = orrery.make("tag", num_worlds=2, device="cpu", seed=4, threads=1)
    env.step(np.zeros((3, 2), np.int64))
    base = env.get_state(0)
    good_snapshot = env.save_world(1)
    ckpt = tmp_path / "good.ckpt"
    env.save_checkpoint(ckpt)
    good_ckpt = ckpt.read_bytes()
    layout = tmp_path / "fuzz.layout"
    layout_text = ('{"grid": """XXPXX\n                   O  2O\n                   X1  X\n                   XDXSX""",\n'
                   ' "start_all_orders": [{"ingredients": ["onion", "onion", "onion"]}], "cook_time": 20}')
    accepted = 0
    for case in range(2100):
        kind = case % 7
        if kind == 0:  # state dicts
            state = base
            for _ in range(rng.randrange(1, 4)):
                state = _mutate(rng, state)
            accepted += _try(env, lambda: env.set_state(rng.randrange(3), state))
        elif kind == 1:  # snapshots with a few bytes changed
            snap = _changed(rng, good_snapshot, 4)
            accepted += _try(env, lambda: env.restore_world(rng.randrange(3), snap))
        elif kind == 2:  # checkpoints with changed bytes and a forged CRC
            ckpt.write_bytes(_forged(rng, good_ckpt))
            accepted += _try(env, lambda: env.load_checkpoint(ckpt))
        elif kind == 3:  # actions of any shape, dtype and value
            shape = rng.choice([(3, 2), (3, 2), (2, 3), (6,), (3, 2, 1)])
            dtype = rng.choice([np.int64, np.int32, np.int8, np.uint8, np.float32, np.float64])
            values = np.array([rng.choice([0, 1, 5, 6, -1, 2**31, 0.5, np.nan]) for _ in range(int(np.prod(shape)))])
            with np.errstate(all="ignore"):
                actions = values.astype(dtype).reshape(shape)
            accepted += _try(env, lambda: env.step(actions))
        elif kind == 5:  # env options: any key, any value; make() either works or says why
            key = rng.choice(["horizon", "cook_time", "soup_value", "placement_in_pot", "start", "layout",
                              "featurized", "old_dynamics", "layout_grid", "nope"])
            value = rng.choice([0, 1, -1, 7, 2**31, 2**64, 1e30, float("nan"), "", "random", "cramped_room",
                                "XXPXX|O12 O|XDXSX", True, None, b"x", [1]])
            accepted += _try(env, lambda: orrery.make("overcooked", num_worlds=1, device="cpu", **{key: value}).close())
        elif kind == 6:  # layout files: a built-in layout with a few characters changed
            text = list(layout_text)
            for _ in range(rng.randrange(1, 4)):
                text[rng.randrange(len(text))] = rng.choice("XPODTS 12{}[]()'\",:#\n\x00\xe9")
            layout.write_text("".join(text), encoding="utf-8", errors="surrogateescape")
            accepted += _try(env, lambda: orrery.make("overcooked", num_worlds=1, device="cpu",
                                                      layout_file=str(layout)).close())
        else:  # tag snapshots and world indices
            snap = bytearray(tag.save_world(0))
            snap[rng.randrange(len(snap))] = rng.randrange(256)
            world = rng.choice([0, 1, 2, -1, 2**40])
            accepted += _try(tag, lambda: tag.restore_world(world, bytes(snap)))
        if case % 50 == 0:  # every world still steps cleanly
            env.step(np.zeros((3, 2), np.int64))
            tag.step(np.zeros((2, 4), np.int64))
            assert not env._sim.errors().any() and not tag._sim.errors().any()
    print(f"public API fuzz: {accepted} of 2100 inputs accepted")
    assert accepted > 0, "the fuzz never produced an accepted input"


def test_reset_zeroes_the_reset_worlds_actions_as_documented():  # finding 10
    env = orrery.make("tag", num_worlds=2, device="cpu", seed=0, threads=1, horizon=3)
    env.actions[:] = 2
    for _ in range(3):
        env.step()
    assert env.actions.tolist() == [[2] * 4, [2] * 4]  # the episode ended on this step
    env.step()  # next-step mode: this step resets both worlds
    assert env.actions.tolist() == [[0] * 4, [0] * 4]
    assert "zeroed" in orrery.Env.step.__doc__ and "zeroes" in open(
        os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")).read()


# The physics module's and hide-and-seek's surfaces (issue 19, item 4): their
# snapshots, checkpoints, actions and options, each env as the fuzz targets make it.
PHYSICS_ENVS = [
    ("physics_scenes", dict(scene="grab", holders=2), ["scene", "count", "kicks", "kick_speed", "ramps", "rays",
                                                        "friction", "substeps", "dt", "max_contacts", "max_joints",
                                                        "gravity", "holders", "grab_at", "nope"]),
    ("hide_and_seek", dict(max_boxes=3), ["variant", "game", "hiders", "seekers", "min_boxes", "max_boxes", "ramps",
                                          "max_rooms", "horizon", "prep_steps", "substeps", "max_contacts",
                                          "walls_block_rays", "outer_wall_prob", "nope"]),
    ("hide_and_seek", dict(variant="gpu_hideseek"), ["variant", "hiders", "seekers", "max_boxes", "horizon"]),
]


@pytest.mark.parametrize("name,options,keys", PHYSICS_ENVS, ids=["physics_grab", "hide_and_seek", "gpu_hideseek"])
def test_public_api_fuzz_of_the_physics_envs(tmp_path, name, options, keys):
    rng = random.Random(23)
    env = orrery.make(name, num_worlds=3, device="cpu", seed=4, threads=1, **options)
    action_shape = tuple(env.tensors[env._action_name()].shape)
    zeros = np.zeros(action_shape, np.int64)
    env.step(zeros)
    good_snapshot = env.save_world(1)
    ckpt = tmp_path / "good.ckpt"
    env.save_checkpoint(ckpt)
    good_ckpt = ckpt.read_bytes()
    accepted = 0
    for case in range(600):
        kind = case % 4
        if kind == 0:  # snapshots with a few bytes changed, into any world index
            snap = _changed(rng, good_snapshot, 4)
            world = rng.choice([0, 1, 2, 2, -1, 3])
            accepted += _try(env, lambda: env.restore_world(world, snap))
        elif kind == 1:  # checkpoints with changed bytes and a forged CRC
            ckpt.write_bytes(_forged(rng, good_ckpt))
            accepted += _try(env, lambda: env.load_checkpoint(ckpt))
        elif kind == 2:  # actions of any shape, dtype and value
            shape = rng.choice([action_shape, action_shape, action_shape[::-1], (int(np.prod(action_shape)),)])
            dtype = rng.choice([np.int64, np.int32, np.int8, np.uint8, np.float32, np.float64])
            values = np.array([rng.choice([0, 1, 5, 10, 11, -1, 2**31, 0.5, np.nan])
                               for _ in range(int(np.prod(shape)))])
            with np.errstate(all="ignore"):
                actions = values.astype(dtype).reshape(shape)
            accepted += _try(env, lambda: env.step(actions))
        else:  # env options: any of the env's keys, any value; make() either works or says why
            key = rng.choice(keys)
            value = rng.choice([0, 1, -1, 3, 9, 65, 2**31, 1e30, float("nan"), "", "crowd", "quadrant",
                                "gpu_hideseek", "openai", True, None, [1]])
            accepted += _try(env, lambda: orrery.make(name, num_worlds=1, device="cpu", **{**options, key: value})
                             .close())
        if case % 40 == 0:  # every world still steps cleanly
            env.step(zeros)
            assert not env._sim.errors().any(), env._sim.errors()
    print(f"{name} {options}: {accepted} of 600 inputs accepted")
    assert accepted > 0, "the fuzz never produced an accepted input"
    env.close()
