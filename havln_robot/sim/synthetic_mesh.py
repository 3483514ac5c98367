"""Synthetic textured glTF scenes in the Habitat layout, generated at run time (no third-party data).

Two generators write ``<out>/<scan>/<scan>.glb`` (Habitat/Matterport3D layout, **y-up** like the
Habitat meshes) and ``<out>/connectivity/<scan>_connectivity.json`` (the Matterport3D navigation
graph format the HA-VLN data uses, **z-up** map frame):

* :func:`write_test_scene` -- a small two-storey house for the tests: room A and room B joined by a
  1.2 m doorway, a red box (:data:`TEST_OBJECT`) at a known place in room A, a straight staircase of
  10 steps (0.15 m x 0.30 m) from room B up to an upper room at z = 1.5 m, and an 8-viewpoint graph
  walking through all of it (one stairs edge ``B2``-``T``). Every surface but the red box carries a
  texture (box-mapped UVs, one image per room).
* :func:`write_large_scene` -- a Matterport-scale mesh for the renderer benchmark: a grid of rooms
  with finely subdivided walls/floors (>= 1 M triangles) and one texture per room (>= 20).

Map frame = Matterport3D world frame (x, y horizontal, z up, m); the glb is written with the
Habitat convention habitat (x, y, z) = (map x, map z, -map y) (docs/sim.md, "Frames").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from havln_robot.paths import write_json

#: Camera height (m) above the floor written into the synthetic graph's viewpoints (Matterport3D
#: tripod heights in the HA-VLN connectivity files are ~1.3-1.6 m).
VIEWPOINT_HEIGHT_M: float = 1.5
#: The map -> habitat (y-up) rotation: habitat (x, y, z) = (x, z, -y).
MAP_TO_HABITAT = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])


@dataclass(frozen=True)
class TestObject:
    """The distinct object of the test scene: an axis-aligned box (map frame, m) and its colour (RGB 0-255)."""

    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    rgb: tuple[int, int, int]

    @property
    def centre(self) -> tuple[float, float, float]:
        """Box centre (m, map frame)."""
        return tuple((a + b) / 2.0 for a, b in zip(self.lo, self.hi, strict=False))  # type: ignore[return-value]


#: The red box in room A of :func:`write_test_scene`.
TEST_OBJECT = TestObject((0.5, 2.9, 0.0), (1.1, 3.5, 0.9), (220, 20, 20))
#: Viewpoints of the test scene: id -> ground point (x, y, z) in the map frame (m).
TEST_VIEWPOINTS: dict[str, tuple[float, float, float]] = {
    "A1": (1.5, 1.2, 0.0),
    "A2": (3.5, 2.0, 0.0),
    "D": (5.1, 2.0, 0.0),
    "B1": (6.5, 2.0, 0.0),
    "B2": (8.25, 3.9, 0.0),
    "T": (8.25, 7.0, 1.5),
    "U1": (7.0, 8.5, 1.5),
    "U2": (9.0, 9.0, 1.5),
}
#: Undirected ``unobstructed`` edges of the test scene (``B2``-``T`` is the staircase).
TEST_EDGES: tuple[tuple[str, str], ...] = (
    ("A1", "A2"),
    ("A2", "D"),
    ("D", "B1"),
    ("B1", "B2"),
    ("B2", "T"),
    ("T", "U1"),
    ("T", "U2"),
    ("U1", "U2"),
)
#: Room A's east wall (x from 5.0 to 5.2 m) seen from viewpoint A2: its distance is known exactly.
TEST_WALL_X_M: float = 5.0


def _texture(seed: int, size: int = 64) -> np.ndarray:
    """A two-tone checker texture (uint8 (size, size, 3)) whose colours depend on ``seed``."""
    rng = np.random.default_rng(seed)
    c1 = rng.integers(90, 200, 3)
    c2 = np.clip(c1 + rng.integers(-50, 50, 3), 0, 255)
    yy, xx = np.mgrid[0:size, 0:size]
    chk = ((xx // 8 + yy // 8) % 2).astype(bool)
    img = np.where(chk[..., None], c1, c2).astype(np.uint8)
    # keep every textured surface clearly different from the red test object
    img[..., 0] = np.minimum(img[..., 0], 170)
    return img


def _box_uv_mesh(lo, hi, subdiv: int = 0, tile_m: float = 1.0):
    """A box (map frame, m) as a trimesh with unmerged vertices and box-mapped UVs (``tile_m`` per texture repeat)."""
    import trimesh

    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    m = trimesh.creation.box(extents=hi - lo)
    m.apply_translation((lo + hi) / 2.0)
    for _ in range(subdiv):
        m = m.subdivide()
    m.unmerge_vertices()
    n = m.face_normals
    ax = np.argmax(np.abs(n), axis=1)  # per face: the dominant normal axis
    v = m.vertices
    uv = np.zeros((len(v), 2))
    f = m.faces
    for k, (i, j) in enumerate(((1, 2), (0, 2), (0, 1))):
        sel = f[ax == k].ravel()
        uv[sel] = v[sel][:, [i, j]] / tile_m
    return m, uv


def _textured(mesh, uv, img):
    import trimesh
    from PIL import Image

    mat = trimesh.visual.material.PBRMaterial(baseColorTexture=Image.fromarray(img), metallicFactor=0.0, roughnessFactor=1.0)
    mesh.visual = trimesh.visual.TextureVisuals(uv=uv, material=mat)
    return mesh


def _coloured(mesh, rgb):
    import trimesh

    mat = trimesh.visual.material.PBRMaterial(baseColorFactor=[*rgb, 255], metallicFactor=0.0, roughnessFactor=1.0)
    mesh.visual = trimesh.visual.TextureVisuals(material=mat)
    return mesh


def _export(meshes: list, path: Path) -> None:
    import trimesh

    scene = trimesh.Scene()
    for i, m in enumerate(meshes):
        m = m.copy()
        m.apply_transform(MAP_TO_HABITAT)
        scene.add_geometry(m, geom_name=f"part_{i:04d}")
    path.parent.mkdir(parents=True, exist_ok=True)
    from havln_robot.paths import atomic_output

    with atomic_output(path) as tmp:
        tmp.write_bytes(scene.export(file_type="glb"))


def write_connectivity(path: Path, viewpoints: dict[str, tuple[float, float, float]], edges) -> Path:
    """Write a Matterport3D ``<scan>_connectivity.json`` (list of viewpoints with ``image_id``, row-major
    4x4 ``pose`` of the camera, ``height`` = camera height above the floor (m), ``included``,
    ``unobstructed`` booleans) for ground points ``viewpoints`` (map frame, m) and undirected ``edges``."""
    ids = list(viewpoints)
    idx = {v: i for i, v in enumerate(ids)}
    adj = np.zeros((len(ids), len(ids)), bool)
    for a, b in edges:
        adj[idx[a], idx[b]] = adj[idx[b], idx[a]] = True
    out = []
    for i, v in enumerate(ids):
        x, y, z = viewpoints[v]
        pose = [1, 0, 0, x, 0, 1, 0, y, 0, 0, 1, z + VIEWPOINT_HEIGHT_M, 0, 0, 0, 1]
        out.append(
            {
                "image_id": v,
                "pose": pose,
                "height": VIEWPOINT_HEIGHT_M,
                "included": True,
                "unobstructed": adj[i].tolist(),
                "visible": adj[i].tolist(),
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, out, newline=False)
    return path


def write_test_scene(out_dir: str | Path, scan: str = "synth_house") -> tuple[Path, Path]:
    """Write the small test house (module docstring) under ``out_dir``.

    Layout (map frame, m): room A x 0-5, y 0-4; wall x 5.0-5.2 with a doorway y 1.4-2.6; room B
    x 5.2-10, y 0-7 (floor z 0, walls 2.5 m); stairs x 7.5-9.0 from y 4 (z 0) to y 7 (z 1.5);
    upper room x 5.2-10, y 7-10 on a solid block whose top is z 1.5, walls up to z 4.

    Returns:
        (glb path ``out_dir/<scan>/<scan>.glb``, connectivity folder ``out_dir/connectivity``).
    """
    out = Path(out_dir)
    parts = []
    k = 0

    def add(lo, hi, tex_seed=None, rgb=None, tile=1.0):
        nonlocal k
        m, uv = _box_uv_mesh(lo, hi, tile_m=tile)
        parts.append(_coloured(m, rgb) if rgb is not None else _textured(m, uv, _texture(tex_seed if tex_seed is not None else k)))
        k += 1

    t = 0.2
    add((0, 0, -0.1), (5.0, 4.0, 0.0), 1)  # room A floor
    add((5.0, 0, -0.1), (10.0, 7.0, 0.0), 2)  # room B floor (and doorway sill)
    add((-t, -t, 0), (0, 4.0 + t, 2.5), 3)  # A west
    add((-t, -t, 0), (10.0 + t, 0, 2.5), 4)  # south (A and B)
    add((0, 4.0, 0), (5.0, 4.0 + t, 2.5), 3)  # A north
    add((5.0, 0, 0), (5.2, 1.4, 2.5), 5)  # A/B wall, south of the doorway
    add((5.0, 2.6, 0), (5.2, 7.0, 2.5), 5)  # A/B wall, north of the doorway
    add((5.0, 1.4, 2.1), (5.2, 2.6, 2.5), 5)  # lintel
    add((10.0, 0, 0), (10.0 + t, 7.0, 2.5), 6)  # B east
    add((5.2, 7.0, 0), (10.0, 10.0, 1.5), 7)  # block under the upper room (its top is the upper floor)
    for i in range(10):  # stairs x 7.5-9.0, y 4 -> 7, z 0 -> 1.5
        add((7.5, 4.0 + 0.3 * i, 0), (9.0, 4.3 + 0.3 * i, 0.15 * (i + 1)), 8)
    add((5.0, 7.0, 1.5), (5.2, 10.0 + t, 4.0), 9)  # upper west
    add((10.0, 7.0, 1.5), (10.0 + t, 10.0 + t, 4.0), 9)  # upper east
    add((5.2, 10.0, 1.5), (10.0, 10.0 + t, 4.0), 10)  # upper north
    add(TEST_OBJECT.lo, TEST_OBJECT.hi, rgb=TEST_OBJECT.rgb)  # the distinct object
    glb = out / scan / f"{scan}.glb"
    _export(parts, glb)
    conn = out / "connectivity"
    write_connectivity(conn / f"{scan}_connectivity.json", TEST_VIEWPOINTS, TEST_EDGES)
    return glb, conn


def write_large_scene(
    out_dir: str | Path, scan: str = "synth_large", rooms: tuple[int, int] = (6, 4), subdiv: int = 5
) -> tuple[Path, Path, int, int]:
    """Write a Matterport-scale synthetic scene for the renderer benchmark (and ``out_dir/episodes.json``,
    one episode snaking through every room).

    A ``rooms[0] x rooms[1]`` grid of 4 x 4 m rooms (2.5 m walls, 1.2 m doorways between neighbours),
    every wall and floor box subdivided ``subdiv`` times (x 4^subdiv triangles) and one texture per
    room, plus a graph of one viewpoint per room centre. Default 24 rooms, ~1.5 M triangles, 24 textures.

    Returns:
        (glb path, connectivity folder, triangle count, texture count).
    """
    out = Path(out_dir)
    nx_, ny_ = rooms
    size, t, h = 4.0, 0.15, 2.5
    parts, tris = [], 0
    vps: dict[str, tuple[float, float, float]] = {}
    edges = []
    for i in range(nx_):
        for j in range(ny_):
            x0, y0 = i * size, j * size
            img = _texture(100 + i * ny_ + j, size=128)
            boxes = [((x0, y0, -0.1), (x0 + size, y0 + size, 0.0))]
            # west and south walls with a centred 1.2 m doorway (outer walls closed)
            for (lo, hi), closed in (
                (((x0, y0, 0), (x0 + t, y0 + size, h)), i == 0),
                (((x0, y0, 0), (x0 + size, y0 + t, h)), j == 0),
            ):
                if closed:
                    boxes.append((lo, hi))
                else:
                    ax = 1 if hi[0] - lo[0] < hi[1] - lo[1] else 0
                    mid = (lo[ax] + hi[ax]) / 2.0
                    a_hi = list(hi)
                    a_hi[ax] = mid - 0.6
                    b_lo = list(lo)
                    b_lo[ax] = mid + 0.6
                    boxes += [(lo, tuple(a_hi)), (tuple(b_lo), hi)]
            if i == nx_ - 1:
                boxes.append(((x0 + size - t, y0, 0), (x0 + size, y0 + size, h)))
            if j == ny_ - 1:
                boxes.append(((x0, y0 + size - t, 0), (x0 + size, y0 + size, h)))
            room = []
            for lo, hi in boxes:
                m, uv = _box_uv_mesh(lo, hi, subdiv=subdiv)
                room.append((m, uv))
            import trimesh

            merged = trimesh.util.concatenate([m for m, _ in room])
            uv = np.concatenate([u for _, u in room])
            parts.append(_textured(merged, uv, img))
            tris += len(merged.faces)
            name = f"r{i}_{j}"
            vps[name] = (x0 + size / 2.0, y0 + size / 2.0, 0.0)
            if i:
                edges.append((f"r{i - 1}_{j}", name))
            if j:
                edges.append((f"r{i}_{j - 1}", name))
    glb = out / scan / f"{scan}.glb"
    _export(parts, glb)
    conn = out / "connectivity"
    write_connectivity(conn / f"{scan}_connectivity.json", vps, edges)
    snake = [f"r{i}_{j if i % 2 == 0 else ny_ - 1 - j}" for i in range(nx_) for j in range(ny_)]
    write_episodes(out / "episodes.json", scan, [tuple(snake)], vps)
    return glb, conn, tris, len(parts)


def project(point, pose, intrinsics, camera_height_m: float, camera_forward_m: float) -> tuple[float, float, float]:
    """Pixel (u, v) and z-depth (m) of a map-frame ``point`` seen by the level head camera of a body at
    ``pose`` (x, y, z_ground, yaw): the inverse of :class:`havln_robot.sim.render.Renderer`'s pinhole
    model (``fx = fy``, principal point ``cx, cy``; u right, v down)."""
    x, y, z, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    cam = np.array([x + c * camera_forward_m, y + s * camera_forward_m, z + camera_height_m])
    d = np.asarray(point, float) - cam
    fwd = d[0] * c + d[1] * s
    left = -d[0] * s + d[1] * c
    up = d[2]
    u = intrinsics.cx - intrinsics.fx * left / fwd
    v = intrinsics.cy - intrinsics.fy * up / fwd
    return float(u), float(v), float(fwd)


#: Paths of the test scene's episodes: every edge walked, the staircase up and down.
TEST_PATHS: tuple[tuple[str, ...], ...] = (
    ("A1", "A2", "D", "B1", "B2", "T", "U2"),  # room A -> doorway -> room B -> up the stairs
    ("U1", "T", "B2", "B1", "D", "A2"),  # down the stairs back to room A
    ("T", "U1", "U2"),
)


def write_episodes(path: str | Path, scan: str = "synth_house", paths=TEST_PATHS, viewpoints=None) -> Path:
    """Write R2R-format discrete episodes (``path_id``, ``scan``, ``path``, ``heading`` (Matterport3D
    heading, rad, toward the first edge), ``instructions``) over ``viewpoints`` (id -> ground point;
    default the test scene's)."""
    vps = TEST_VIEWPOINTS if viewpoints is None else viewpoints
    eps = []
    for k, p in enumerate(paths):
        a, b = vps[p[0]], vps[p[1]]
        yaw = math.atan2(b[1] - a[1], b[0] - a[0])
        eps.append(
            {
                "path_id": 9000 + k,
                "scan": scan,
                "path": list(p),
                "heading": math.pi / 2 - yaw,
                "instructions": [f"walk from {p[0]} to {p[-1]} past the red box"],
                "distance": 0.0,
            }
        )
    for e in eps:
        del e["distance"]  # let the loader measure the reference path
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, eps, newline=False)
    return path


def write_scene_mesh(scene, out_dir: str | Path) -> Path:
    """Write a procedural :class:`~havln_robot.sim.scene.Scene` (e.g. a real scan's, built from its
    HA-VLN navigation graph) as ``out_dir/<scan>/<scan>.glb`` in the Habitat y-up layout: the
    renderer's own walls, floors, ceilings and stairs ramps (:func:`havln_robot.sim.render.scene_meshes`),
    one flat colour each. A stand-in for a real scan mesh with the real graph's floors and stairs,
    for tests and benchmarks on the real data; not a Matterport3D mesh."""
    import trimesh

    from havln_robot.sim.render import scene_floors, scene_meshes, scene_ramps

    colours = {"wall": (200, 190, 170), "floor": (150, 120, 90), "ceiling": (235, 235, 230), "stairs": (120, 110, 100)}
    meshes = []
    for part in scene_meshes(scene_floors(scene), scene_ramps(scene)):
        m = trimesh.Trimesh(np.asarray(part.vertices, float), np.asarray(part.faces), process=False)
        meshes.append(_coloured(m, colours.get(part.material, (128, 128, 128))))
    glb = Path(out_dir) / scene.name / f"{scene.name}.glb"
    _export(meshes, glb)
    return glb
