"""Episode readers: discrete HA-R2R/R2R, continuous VLN-CE schema, heading/frame conventions, bad input."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from havln_robot.episodes import (
    EpisodeError,
    builtin_episode,
    habitat_quat_to_yaw,
    load_episodes,
    mp3d_heading_to_yaw,
    yaw_to_mp3d_heading,
)


@pytest.fixture(scope="module")
def val_seen(havln_data):
    return load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json")


def test_discrete_ha_r2r_fields(val_seen, havln_data):
    assert len(val_seen) == 340
    raw = json.loads((havln_data / "ha_r2r_de" / "HA_val_seen.json").read_text())
    conn = {c["image_id"]: c for c in json.loads((havln_data / "connectivity" / f"{raw[0]['scan']}_connectivity.json").read_text())}
    ep = val_seen[0]
    assert ep.episode_id == str(raw[0]["path_id"]) and ep.scan == raw[0]["scan"]
    first = conn[raw[0]["path"][0]]
    # ground point = pose translation minus camera height
    assert ep.start_position == pytest.approx((first["pose"][3], first["pose"][7], first["pose"][11] - first["height"]))
    assert ep.goal_position == ep.reference_path[-1] and ep.goal_radius == 3.0
    assert ep.path_ids == tuple(raw[0]["path"])
    assert ep.geodesic_distance == pytest.approx(raw[0]["distance"])
    assert ep.instruction == raw[0]["instructions"][0].strip()
    assert len(ep.humans) == len(raw[0]["human"])
    h = ep.humans[0]
    region, text = raw[0]["human"][0]["human_description"].split(":", 1)
    assert (h.region, h.description, h.viewpoint) == (region, text.strip(), raw[0]["human"][0]["human_viewpoint"])
    # summed 3-D edge length of camera positions equals `distance` to 5 mm (data README); our ground
    # points differ only by camera heights, so the path is close to it
    ref = np.asarray(ep.reference_path)
    assert np.linalg.norm(np.diff(ref, axis=0), axis=1).sum() == pytest.approx(ep.geodesic_distance, abs=0.5)


def test_heading_convention_matches_the_data(val_seen):
    """Matterport3D heading: from +y, clockwise positive -> yaw = pi/2 - heading; check it on HA_val_seen."""
    assert mp3d_heading_to_yaw(0.0) == pytest.approx(math.pi / 2)  # heading 0 looks along +y
    assert mp3d_heading_to_yaw(math.pi / 2) == pytest.approx(0.0)  # turning right (clockwise) reaches +x
    assert yaw_to_mp3d_heading(mp3d_heading_to_yaw(1.234)) == pytest.approx(1.234)

    def aligned(yaws):
        n = 0
        for ep, yaw in zip(val_seen, yaws, strict=True):
            (x0, y0, _), (x1, y1, _) = ep.reference_path[:2]
            err = (math.atan2(y1 - y0, x1 - x0) - yaw + math.pi) % (2 * math.pi) - math.pi
            n += abs(err) < math.radians(45)
        return n / len(val_seen)

    ours = aligned([ep.start_yaw for ep in val_seen])
    headings = [yaw_to_mp3d_heading(ep.start_yaw) for ep in val_seen]
    others = [aligned([s * h + k * math.pi / 2 for h in headings]) for s in (1, -1) for k in range(4) if not (s == -1 and k == 1)]
    assert ours > 0.3  # chance is 0.25
    assert ours > max(others)


def _to_continuous(ep) -> dict:
    """A VLN-CE style episode built from a discrete one with independent maths (scipy rotations)."""
    hab = lambda p: [p[0], p[2], -p[1]]  # noqa: E731 - habitat y-up: (x, z_up, -y)
    # habitat agents look along local -z; rotate about +y by theta so -z maps onto the map yaw
    theta = math.atan2(-math.cos(ep.start_yaw), math.sin(ep.start_yaw))
    q = Rotation.from_euler("y", theta).as_quat()  # [x, y, z, w]
    fwd = Rotation.from_quat(q).apply([0.0, 0.0, -1.0])
    assert fwd[0] == pytest.approx(math.cos(ep.start_yaw)) and -fwd[2] == pytest.approx(math.sin(ep.start_yaw))
    return {
        "episode_id": f"17-{ep.episode_id}",  # unique per episode (repeated ids are refused)
        "trajectory_id": int(ep.episode_id),
        "scene_id": f"mp3d/{ep.scan}/{ep.scan}.glb",
        "start_position": hab(ep.start_position),
        "start_rotation": list(q),
        "goals": [{"position": hab(ep.goal_position), "radius": 3.0}],
        "reference_path": [hab(p) for p in ep.reference_path],
        "instruction": {"instruction_text": ep.instruction, "instruction_tokens": [5, 6, 7]},
        "info": {"geodesic_distance": ep.geodesic_distance},
    }


def test_continuous_schema_round_trips_to_the_same_map_frame(val_seen, tmp_path):
    src = [val_seen[0], val_seen[7]]
    f = tmp_path / "val_seen.json.gz"
    with gzip.open(f, "wt") as fh:
        json.dump({"episodes": [_to_continuous(e) for e in src]}, fh)
    got = load_episodes(f)
    assert len(got) == 2
    for e, c in zip(src, got, strict=True):
        assert c.episode_id == f"17-{e.episode_id}" and c.scan == e.scan and c.path_ids == ()
        assert c.start_position == pytest.approx(e.start_position, abs=1e-9)
        assert c.goal_position == pytest.approx(e.goal_position, abs=1e-9)
        assert np.allclose(c.reference_path, e.reference_path, atol=1e-9)
        assert math.cos(c.start_yaw - e.start_yaw) == pytest.approx(1.0, abs=1e-9)
        assert c.instruction == e.instruction and c.geodesic_distance == pytest.approx(e.geodesic_distance)
    # a plain rotation of theta about habitat +y gives yaw = theta + pi/2
    assert habitat_quat_to_yaw([0.0, math.sin(0.15), 0.0, math.cos(0.15)]) == pytest.approx(0.3 + math.pi / 2)


def test_empty_instruction_falls_back_to_the_next(val_seen, havln_data):
    raw = json.loads((havln_data / "ha_r2r_de" / "HA_val_seen.json").read_text())
    i = next(k for k, r in enumerate(raw) if not r["instructions"][0].strip())
    assert val_seen[i].instruction == next(s.strip() for s in raw[i]["instructions"] if s.strip())
    every = load_episodes(havln_data / "ha_r2r_de" / "HA_val_seen.json", instruction_index=None, limit=30)
    assert all("_" in e.episode_id and e.instruction for e in every)


def test_r2r_files_load_without_humans(havln_data):
    eps = load_episodes(havln_data / "r2r" / "R2R_val_seen.json", limit=5)
    assert len(eps) == 5 and all(e.humans == () for e in eps)


def _write(tmp_path, name, data, gz=False):
    f = tmp_path / name
    if gz:
        with gzip.open(f, "wt") as fh:
            json.dump(data, fh)
    else:
        f.write_text(json.dumps(data))
    return f


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda e: e.pop("scan"), "missing field 'scan'"),
        (lambda e: e.update(path=["not-a-viewpoint"]), "field 'path' names viewpoint 'not-a-viewpoint'"),
        (lambda e: e.update(heading="north"), "field 'heading' has type str"),
        (lambda e: e.update(instructions=[]), "field 'instructions'"),
        (lambda e: e.update(human=[{"human_viewpoint": "zz"}]), "missing field 'human_description'"),
    ],
)
def test_bad_discrete_entries_name_the_field(havln_data, tmp_path, mutate, match):
    raw = json.loads((havln_data / "ha_r2r_de" / "HA_val_seen.json").read_text())[:2]
    mutate(raw[1])
    with pytest.raises(EpisodeError, match=match) as ei:
        load_episodes(_write(tmp_path, "bad.json", raw), havln_data / "connectivity")
    assert "entry 1" in str(ei.value) and "\n" not in str(ei.value)


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda e: e.pop("start_rotation"), "missing field 'start_rotation'"),
        (lambda e: e.update(start_rotation=[0, 0, 0, 0]), "zero quaternion"),
        (lambda e: e.update(start_position=[1, 2]), "field 'start_position' must be"),
        (lambda e: e.update(goals=[]), "field 'goals'"),
        (lambda e: e.update(instruction={"instruction_text": ""}), "instruction.instruction_text"),
    ],
)
def test_bad_continuous_entries_name_the_field(val_seen, tmp_path, mutate, match):
    e = _to_continuous(val_seen[0])
    mutate(e)
    with pytest.raises(EpisodeError, match=match):
        load_episodes(_write(tmp_path, "bad.json.gz", {"episodes": [e]}, gz=True))


def test_bad_files(tmp_path, havln_data):
    with pytest.raises(EpisodeError, match="not found"):
        load_episodes(tmp_path / "none.json")
    (tmp_path / "x.json").write_text("{oops")
    with pytest.raises(EpisodeError, match="not readable"):
        load_episodes(tmp_path / "x.json")
    with pytest.raises(EpisodeError, match="top level"):
        load_episodes(_write(tmp_path, "y.json", {"foo": 1}))
    raw = json.loads((havln_data / "ha_r2r_de" / "HA_val_seen.json").read_text())[:1]
    with pytest.raises(EpisodeError, match="connectivity file .* not found"):
        load_episodes(_write(tmp_path, "z.json", raw), tmp_path)


def test_builtin_episode():
    ep = builtin_episode()
    assert ep.scan == "builtin" and len(ep.humans) == 2 and ep.geodesic_distance == pytest.approx(10.0)
