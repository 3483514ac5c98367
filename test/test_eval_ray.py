"""eval on Ray (--ray / --workers), per-episode seeding, --resume, and havln-robot sweep.

One local Ray runtime for this module (2 CPUs, every port on 127.0.0.1), started by the
``ray_local`` fixture and shut down after the module's last test (its processes would otherwise take
CPU and memory from the rest of the suite); eval/sweep find it connected and use it. Costs on 2 loaded cores: the runtime
~10-15 s to start; each test a few seconds (expert / forward / random on 3-8 val_seen episodes).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from havln_robot import cluster, sweep
from havln_robot import eval as ev


@pytest.fixture(scope="module")
def crash_dir(tmp_path_factory):
    """The fault-injection folder (eval.CRASH_HOOK_ENV), set before the Ray runtime starts so its workers inherit it."""
    d = tmp_path_factory.mktemp("crash")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ev.CRASH_HOOK_ENV, str(d))
        yield d


@pytest.fixture(scope="module")
def ray_local(crash_dir):
    """One local Ray runtime (2 CPUs, 127.0.0.1) for this module's tests (ray is imported by cluster.connect, in loopback mode)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (make setup)")
    started = cluster.connect("local", 2)
    yield
    if started:
        cluster.disconnect()


def _rows(out_dir) -> list[dict]:
    rows = [json.loads(line) for line in (out_dir / "results.jsonl").read_text().splitlines()]
    for r in rows:
        r.pop("seconds")
    return rows


def _eval(havln_data, out, *extra) -> int:
    ep = str(havln_data / "ha_r2r_de" / "HA_val_seen.json")
    return ev.main(["--episodes", ep, "--out", str(out), "-q", *extra])


# ------------------------------------------------------------------------------------------------ no data needed
def test_episode_seed_is_a_hash_of_seed_and_episode_id():
    s = ev.episode_seed(0, "6047")
    assert s == ev.episode_seed(0, "6047") and 0 <= s < 2**32
    assert len({ev.episode_seed(seed, eid) for seed in (0, 1) for eid in ("6047", "711", "1")}) == 6


def test_fov_mask_blanks_outside_the_field_of_view():
    assert ev.fov_mask(256, 256, 90.0, 90.0, 90.0) is None
    m = ev.fov_mask(256, 256, 90.0, 69.0, 42.0)
    assert m.shape == (256, 256) and m.dtype == bool
    # kept width = 2 f tan(34.5 deg), f = 128 px (90 deg render): 176 px; height 2 f tan(21 deg) = 98 px
    assert abs(int(m[128].sum()) - 176) <= 2 and abs(int(m[:, 128].sum()) - 98) <= 2
    assert not m[0, 0] and m[128, 128]
    with pytest.raises(ValueError, match="hfov_deg"):
        ev.fov_mask(256, 256, 90.0, 0.0, 90.0)


def test_narrow_camera_reaches_the_policy_observation():
    """hfov 45: the policy's depth is 0 at the image sides and mostly not in the middle; hfov 90 leaves the sides."""
    pytest.importorskip("mujoco")
    from havln_robot.episodes import builtin_episode
    from havln_robot.sim.scene import Scene
    from havln_robot.sim.world import World

    class Probe:
        views, name = 1, "probe"

        def reset(self, instruction):
            self.obs = None

        def act(self, obs):
            self.obs = obs
            return "STOP"

    seen = {}
    for hfov in (90.0, 45.0):
        pol = Probe()
        try:
            ev.run_episode(World(Scene.builtin(), builtin_episode(), seed=0), pol, hfov_deg=hfov)
        except Exception as exc:  # noqa: BLE001 - no headless OpenGL here
            pytest.skip(f"no headless OpenGL: {exc}")
        seen[hfov] = pol.obs.depth[0, :, :, 0]
    mid = seen[45.0].shape[1] // 2
    # the middle column holds depth (0 only where nothing is within the camera's range, as live)
    assert float(seen[45.0][:, :10].max()) == 0.0 and float((seen[45.0][:, mid] > 0.0).mean()) > 0.5
    assert float(seen[90.0][:, :10].max()) > 0.0


def test_wilson_and_bootstrap_intervals():
    lo, hi = sweep.wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(sweep.Z95**2 / (10 + sweep.Z95**2))  # closed form at k = 0
    lo, hi = sweep.wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    assert all(math.isnan(v) for v in sweep.wilson(0, 0))
    x = np.r_[np.zeros(50), np.ones(50)]
    lo, hi = sweep.bootstrap_mean(x)
    assert lo < 0.5 < hi and hi - lo == pytest.approx(0.2, abs=0.05)  # ~ 2 x 1.96 x 0.05


def test_sweep_spec_errors_are_one_line(tmp_path, capsys):
    cases = {
        "grid: {speed: [1, 2]}": "unknown variable 'speed'",
        "grid: {people: [-1]}": "people: -1 is not a whole number >= 0",
        "grid: {hfov_deg: [120]}": "hfov_deg: 120 is not a number in (0, 90]",
        "base: {seed: 1}\ngrid: {seed: [1, 2]}": "seed is also in base",
        "episodes: 0": "episodes: 0 is not a whole number >= 1",
        "grids: {}": "unknown key 'grids'",
    }
    if not ev.closed_loop_world():  # the closed-loop world makes the noise variables available
        cases["grid: {odom_noise_scale: [0, 1]}"] = "not available yet"
    else:
        cases["grid: {odom_noise_scale: [-1]}"] = "odom_noise_scale: -1"
    for text, msg in cases.items():
        f = tmp_path / "s.yaml"
        f.write_text(text + "\n")
        assert sweep.main([str(f), "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0], (text, err)


def test_noise_and_latency_options_map_onto_the_base_noise_model(tmp_path, capsys):
    from havln_robot.sim.robot import NoiseModel

    d = NoiseModel()
    n = ev.noise_model(2.0, 0.2)
    assert n.latency_s == 0.2 and n.odom_trans_noise == 2 * d.odom_trans_noise and n.gyro_bias_std == 2 * d.gyro_bias_std
    assert ev.noise_model(0.0, None) == NoiseModel.none().__class__(**{**vars(NoiseModel.none()), "latency_s": d.latency_s})
    opts = ev.EvalOptions(odom_noise_scale=0.5, latency_s=0.1, max_linear_speed=0.4)
    if ev.closed_loop_world():
        lo = ev.loop_options(opts)
        assert lo["params"] == {"max_linear_speed": 0.4} and lo["noise"] == ev.noise_model(0.5, 0.1)
    else:  # the open-loop world refuses them in one line, before any episode runs
        assert ev.main(["--episodes", str(tmp_path / "none.json"), "--odom-noise-scale", "1"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--odom-noise-scale needs the closed-loop batch world" in err[0]
        assert ev._action_dt(ev.EvalOptions(max_linear_speed=0.5)) == pytest.approx(0.5)  # 0.25 m / 0.5 m/s


def test_sweep_table_maps_every_variable_to_an_eval_option():
    names = {f.name for f in dataclasses.fields(ev.EvalOptions)} | {"episodes"}
    for name, var in sweep.VARIABLES.items():
        assert var.pending or var.option in names, name
    from havln_robot.paths import REPO_ROOT

    example = sweep.load_spec(REPO_ROOT / "config" / "sweep_example.yaml")
    assert len(example.settings) == 6 and example.swept == ("hfov_deg", "people")
    spec = sweep.parse_spec({"base": {"max_linear_speed": 0.5}, "grid": {"hfov_deg": [90, 69]}})
    assert [s.options.hfov_deg for s in spec.settings] == [90.0, 69.0]
    assert all(s.options.max_linear_speed == 0.5 for s in spec.settings)


def test_local_runtime_is_on_loopback(ray_local):
    """The session's runtime (started by cluster.connect("local")): node and GCS on 127.0.0.1, 2 CPUs."""
    import ray

    assert [n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]] == ["127.0.0.1"]
    assert ray.get_runtime_context().gcs_address.startswith("127.0.0.1:")
    assert cluster.cluster_size() == (2.0, 1)


def test_ray_engine_matches_serial_on_the_builtin_scene(ray_local):
    """Without the HA-VLN data: the project's own scene, random policy under 6 seeds, serial vs Ray tasks."""
    from havln_robot.episodes import builtin_episode

    ep = builtin_episode()
    jobs = [ev.Job(i, ep, ev.EvalOptions(policy="random", seed=i)) for i in range(6)]
    got: dict[str, dict[int, dict]] = {"serial": {}, "ray": {}}
    for name, target in (("serial", None), ("ray", ("local", 2))):
        out = ev.run_engine(jobs, target, lambda r, name=name: got[name].__setitem__(r[0], r[2]), quiet=True)
        assert out.finished == 6 and not out.failed
    for rows in got.values():
        for r in rows.values():
            r.pop("seconds")
    assert got["serial"] == got["ray"] and len({tuple(r["actions"]) for r in got["ray"].values()}) > 1


# ------------------------------------------------------------------------------------------------ real data
def test_eval_ray_local_gives_the_serial_results(havln_data, ray_local, tmp_path):
    """--ray local: per-episode rows and actions identical to the serial run (expert and the seeded random policy)."""
    for pol in ("random", "expert"):
        assert _eval(havln_data, tmp_path / f"s_{pol}", "--policy", pol, "--limit", "8") == 0
        assert _eval(havln_data, tmp_path / f"r_{pol}", "--policy", pol, "--limit", "8", "--ray", "local") == 0
        assert _rows(tmp_path / f"s_{pol}") == _rows(tmp_path / f"r_{pol}")
        a = json.loads((tmp_path / f"s_{pol}" / "actions.json").read_text())
        assert a == json.loads((tmp_path / f"r_{pol}" / "actions.json").read_text())
        assert [r["episode_id"] for r in _rows(tmp_path / f"r_{pol}")] == list(a)  # input order
        assert not (tmp_path / f"r_{pol}" / ev.PARTIAL_NAME).exists()
        assert json.loads((tmp_path / f"r_{pol}" / "summary.json").read_text())["engine"] == "ray local"


def test_an_episode_result_does_not_depend_on_the_others(havln_data):
    """Per-episode seed = hash(seed, episode id): episodes 3-5 alone give what they give among 0-5 (random policy)."""
    from havln_robot.episodes import load_episodes

    eps = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", limit=6)
    whole = ev.evaluate(eps, "random", havln_data / "connectivity", seed=3)
    part = ev.evaluate(eps[3:][::-1], "random", havln_data / "connectivity", seed=3)
    assert [r.actions for r in whole[3:]] == [r.actions for r in part[::-1]]
    assert len({tuple(r.actions) for r in whole}) > 1


def test_a_dead_worker_is_retried_and_no_finished_episode_is_lost(havln_data, ray_local, crash_dir, tmp_path):
    assert _eval(havln_data, tmp_path / "serial", "--policy", "forward", "--limit", "5") == 0
    victim = _rows(tmp_path / "serial")[2]["episode_id"]
    (crash_dir / f"{victim}.crash").write_text("")
    assert _eval(havln_data, tmp_path / "ray", "--policy", "forward", "--limit", "5", "--ray", "local") == 0
    assert not (crash_dir / f"{victim}.crash").exists()  # the worker running it died once
    assert _rows(tmp_path / "serial") == _rows(tmp_path / "ray")


def test_resume_after_a_crash_finishes_the_run(havln_data, tmp_path, capsys):
    """A serial run killed mid-way (its process exits on episode 3) keeps what finished; --resume runs only the rest."""
    ep = str(havln_data / "ha_r2r_de" / "HA_val_seen.json")
    assert _eval(havln_data, tmp_path / "ref", "--policy", "expert", "--limit", "5") == 0
    ids = [r["episode_id"] for r in _rows(tmp_path / "ref")]
    crash = tmp_path / "crash"
    crash.mkdir()
    out = tmp_path / "run"
    from havln_robot.episodes import load_episodes

    scans = {e.episode_id: e.scan for e in load_episodes(ep, limit=5)}
    order = sorted(ids, key=lambda e: (scans[e], ids.index(e)))  # the serial engine's order
    (crash / f"{order[3]}.crash").write_text("")
    env = dict(os.environ, **{ev.CRASH_HOOK_ENV: str(crash)})
    cmd = [sys.executable, "-m", "havln_robot.eval", "--episodes", ep, "--policy", "expert", "--limit", "5", "--out", str(out), "-q"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 3, p.stderr
    lines = (out / ev.PARTIAL_NAME).read_text().splitlines()
    assert len(lines) == 1 + 3 and not (out / "results.jsonl").exists()
    with (out / ev.PARTIAL_NAME).open("a") as fh:
        fh.write('{"episode_id": "torn')  # a line cut by the kill
    capsys.readouterr()
    assert ev.main(["--episodes", ep, "--policy", "expert", "--limit", "5", "--out", str(out), "--resume"]) == 0
    assert "resuming: 3 episodes already in" in capsys.readouterr().err
    assert _rows(out) == _rows(tmp_path / "ref")
    assert json.loads((out / "summary.json").read_text())["episodes_run"] == 2


def test_resume_with_other_options_is_refused(havln_data, tmp_path, capsys):
    out = tmp_path / "run"
    assert _eval(havln_data, out, "--policy", "forward", "--limit", "1") == 0
    ep = havln_data / "ha_r2r_de" / "HA_val_seen.json"
    _b, why = ev.default_baseline(ep, [])
    run = ev.EvalOptions(policy="forward").key() | {"episodes_file": str(ep.resolve()), "instruction_index": 0, "baseline": why}
    (out / ev.PARTIAL_NAME).write_text(json.dumps({"format": 1, "run": run}) + "\n")
    capsys.readouterr()
    assert _eval(havln_data, out, "--policy", "forward", "--limit", "1", "--resume", "--seed", "1") == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "was written with seed=0, this run has seed=1; give the same options or another --out" in err


def test_sweep_2x2_on_ray_writes_table_plot_and_caches(havln_data, ray_local, tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text("episodes: 3\nbase: {split: val_seen}\ngrid:\n  policy: [expert, forward]\n  people: [0, 1]\n")
    out = tmp_path / "out"
    assert sweep.main([str(spec), "--out", str(out), "--ray", "local", "-q"]) == 0
    text = capsys.readouterr().out
    assert "| policy | people | n | SR (%) |" in text and "12 episodes run" in text
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert [(r["policy"], r["people"]) for r in rows] == [("expert", "0"), ("expert", "1"), ("forward", "0"), ("forward", "1")]
    assert all(r["n"] == "3" for r in rows)
    sr = {(r["policy"], r["people"]): float(r["sr"]) for r in rows}
    # closed-loop world: the expert walks all 3, 711's stairs included (climbable-terrain rule)
    assert sr[("expert", "0")] == 1.0 and sr[("forward", "0")] == 0.0
    assert float(rows[0]["sr_lo"]) < 1.0 == float(rows[0]["sr_hi"])  # Wilson interval of 3/3
    assert (out / "sweep.md").read_text().count("\n| ") == 2 + 4 and (out / "sweep_sr.png").stat().st_size > 10_000
    # the same settings again come from the cache (serial engine: Ray is not even needed); the table
    # of the first run is replaced only with --overwrite
    with pytest.raises(ValueError, match="--overwrite"):
        sweep.main([str(spec), "--out", str(out), "-q"])
    assert sweep.main([str(spec), "--out", str(out), "-q", "--overwrite"]) == 0
    assert "0 episodes run" in capsys.readouterr().out
    assert list(csv.DictReader((out / "sweep.csv").open())) == rows
    # a sweep setting equals the eval of the same options
    assert _eval(havln_data, tmp_path / "e", "--policy", "expert", "--crowd", "1", "--limit", "3") == 0
    ne = np.mean([r["ne"] for r in _rows(tmp_path / "e")])
    assert float(rows[1]["ne"]) == pytest.approx(ne)


def test_batch_observations_give_the_live_camera_pipelines_decisions(havln_data):
    """The shipped model's first decision on val_seen starts, from eval's batch observer,
    is the one it takes from what the live graph feeds it at the same pose: sim_node's camera
    (config/sim.yaml: 640x480 at 69.4 deg, depth outside depth_min_m..depth_max_m published as 0)
    through agent_node's preprocessing. Before, batch clipped far depth to 10 m where the camera
    gives 0 (invalid): 6 of the first 40 decisions differed (6757, the third, among them)."""
    pytest.importorskip("mujoco")
    from havln_robot.episodes import load_episodes
    from havln_robot.perception.preprocess import to_model_depth, to_model_rgb
    from havln_robot.policy.api import Observation
    from havln_robot.rosparams import node_params
    from havln_robot.sim.humans import Crowd
    from havln_robot.sim.render import Renderer, depth_to_mm
    from havln_robot.sim.scene import Scene
    from havln_robot.sim.world import World

    cam = node_params("sim_node")
    w_px, h_px, hfov = int(cam["camera_width"]), int(cam["camera_height"]), float(cam["camera_hfov_deg"])
    lo, hi = float(cam["depth_min_m"]), float(cam["depth_max_m"])
    eps = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", havln_data / "connectivity", limit=3)
    scenes: dict = {}
    differ = []
    for ep in eps:
        scene = scenes.get(ep.scan) or scenes.setdefault(ep.scan, Scene.load(ep.scan, havln_data / "connectivity"))
        world = World(scene, ep, Crowd.from_episode(ep, scene, 0), seed=0)
        world.reset()
        observer = ev._Observer(world, 12)
        batch = observer.observe(0)
        observer.close()
        live_cam = Renderer(scene, world.crowd, w_px, h_px, hfov)
        x, y, z, yaw = world.camera_pose
        rgbs, depths = [], []
        for h in batch.headings:
            rgb, depth = live_cam.render((x, y, z, yaw + float(h)), 0.0, float(world.t))
            rgbs.append(to_model_rgb(rgb, hfov, mode="pad"))
            depths.append(to_model_depth(depth_to_mm(depth, lo, hi), hfov, mode="pad"))
        live_cam.close()
        live = Observation(np.stack(rgbs), np.stack(depths).astype(np.float32), batch.headings.copy(), 0)
        macros = []
        for obs in (batch, live):
            pol = ev.make_policy("models/small_panoramic.pt", seed=0)
            pol.reset(ep.instruction)
            macros.append([pol.act(obs), *pol._queue])
        if macros[0] != macros[1]:
            differ.append(ep.episode_id)
    assert differ == []
