"""World state from Python: hashes, snapshots, copies, checkpoints and the
env's JSON state (where the env defines one)."""

import numpy as np
import pytest

import orrery


def make(**kw):
    return orrery.make("tag", num_worlds=4, device="cpu", seed=21, threads=1, **kw)


def advance(env, steps, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        env.step(rng.integers(0, 5, size=(4, 4)).astype(np.int32))


def test_state_hash_tracks_the_state():
    env = make()
    h0 = env.state_hash(0)
    assert isinstance(h0, int) and 0 <= h0 < 2**64
    advance(env, 1)
    assert env.state_hash(0) != h0
    assert len({env.state_hash(w) for w in range(4)}) == 4  # worlds differ


def test_save_restore_continues_exactly():
    env, twin = make(), make()
    advance(env, 5)
    advance(twin, 5)
    snap = env.save_world(2)
    advance(env, 7, seed=1)
    env.restore_world(2, snap)
    assert env.state_hash(2) == twin.state_hash(2)
    with pytest.raises(ValueError, match="snapshot holds 3 bytes"):
        env.restore_world(2, b"abc")
    with pytest.raises(TypeError, match="snapshot has type str"):
        env.restore_world(2, "abc")


def test_copy_world():
    env = make()
    advance(env, 3)
    env.copy_world(1, 3)
    assert env.state_hash(1) == env.state_hash(3)


def test_checkpoint_round_trip(tmp_path):
    env, other = make(), make()
    advance(env, 9)
    path = tmp_path / "tag.ckpt"
    env.save_checkpoint(path)
    other.load_checkpoint(str(path))
    assert [env.state_hash(w) for w in range(4)] == [other.state_hash(w) for w in range(4)]
    advance(env, 4, seed=3)
    advance(other, 4, seed=3)
    np.testing.assert_array_equal(env.obs, other.obs)


def test_bad_checkpoints_leave_state_untouched(tmp_path):
    env = make()
    advance(env, 2)
    before = [env.state_hash(w) for w in range(4)]
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"not a checkpoint at all, just text that is long enough")
    with pytest.raises(ValueError, match="rejected: not an Orrery checkpoint"):
        env.load_checkpoint(bad)
    good = tmp_path / "other.ckpt"
    orrery.make("tag", num_worlds=2, device="cpu").save_checkpoint(good)
    with pytest.raises(ValueError, match="written for a different simulator"):
        env.load_checkpoint(good)
    with pytest.raises(ValueError, match="cannot open checkpoint"):
        env.load_checkpoint(tmp_path / "missing.ckpt")
    assert [env.state_hash(w) for w in range(4)] == before


def test_env_without_json_state_says_so():
    env = make()
    with pytest.raises(ValueError, match="env 'tag' has no JSON state form"):
        env.get_state(0)
    with pytest.raises(ValueError, match="no JSON state form"):
        env.set_state(0, {})
    with pytest.raises(TypeError, match="state has type int"):
        env.set_state(0, 5)


def test_memory_report():
    report = make().memory_report()
    assert report["total_bytes"] > 0
    assert [r["archetype"] for r in report["archetypes"]] == ["Agent", "Pellet", "Arena"]
    assert "total:" in report["text"]
    assert report["scratch_slots"] == 0 and report["scratch_bytes"] == 0  # tag keeps no step scratch


def test_step_scratch_is_a_slot_per_thread_not_per_world():
    # physics' simulate keeps its bodies, contacts, pairs and colouring as step scratch
    reports = [
        orrery.make("physics_scenes", num_worlds=n, device="cpu", threads=2, scene="crowd").memory_report()
        for n in (4, 64)
    ]
    for r in reports:
        assert r["scratch_slots"] == 2
        assert r["scratch_bytes"] == 2 * r["scratch_slot_bytes"] > 0
        assert "PhysicsWorld" in [a["archetype"] for a in r["archetypes"]]
        assert "pool: 2 slots (one per CPU thread)" in r["text"]
    world = [a for a in reports[0]["archetypes"] if a["archetype"] == "PhysicsWorld"][0]
    assert world["bytes_per_world"] < reports[0]["scratch_slot_bytes"]  # the cache and joints only
