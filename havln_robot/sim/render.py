"""RGB-D rendering of a simulator scene from the Go2's head camera, with MuJoCo (headless).

Pure Python (no ROS). A :class:`Renderer` builds one MuJoCo MJCF model per scene -- for every
floor a floor slab, a ceiling and the walls (thin boxes along ``scene.drawn_walls``: the floor's
wall segments, none inside a landing, ending under the flights they would rise through),
plus one mocap body per human (legs, torso, arms, head; 1.7 m tall, 0.3 m footprint radius) --
and renders colour and depth in **one** OpenGL pass from a pinhole camera with square pixels:

* colour: ``uint8 (H, W, 3)`` RGB;
* depth: ``float32 (H, W)`` metres along the optical axis (z-depth, as the RealSense reports),
  read from the same pass's depth buffer, so it is aligned to colour by construction;
  ``0`` where nothing is hit (never happens indoors: walls, floor and ceiling close the view).

Headless OpenGL: ``MUJOCO_GL=egl`` (the default set here); when EGL cannot create a context the
module falls back to ``osmesa`` (probed once, in a subprocess, only when ``MUJOCO_GL`` is unset).

Camera model (REP 103 body frame, optical frame REP 105 ``camera_color_optical_frame``):
focal length from the horizontal FOV, ``fx = fy = (W/2) / tan(HFOV/2)``, ``cx = (W-1)/2``,
``cy = (H-1)/2``, zero distortion (plumb_bob). Default HFOV 69.4 deg (D435i colour, RealSense
D400 datasheet 337029). With square pixels at 640x480 (4:3) that gives VFOV 54.9 deg; the
datasheet's 42.5 deg VFOV is for the native 16:9 format.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from havln_robot.camera import Intrinsics  # noqa: F401  (re-exported: the renderer's CameraInfo)
from havln_robot.motion.lidar import GENERIC_ELEVATION_DEG
from havln_robot.sim.robot import D435I_HFOV_DEG, D435I_MAX_RANGE_M, D435I_MIN_RANGE_M, GO2_CAMERA_FORWARD_M, GO2_CAMERA_HEIGHT_M
from havln_robot.sim.scene import WALL_THICKNESS_M, clip_segments  # noqa: F401  (clip_segments re-exported)


def _probe_gl(backend: str) -> bool:
    """True when a MuJoCo GL context of ``backend`` can be created (checked in a subprocess)."""
    code = "import mujoco\nfrom mujoco.rendering.classic import gl_context\nc = gl_context.GLContext(8, 8)\nc.make_current()\nc.free()\n"
    env = {**os.environ, "MUJOCO_GL": backend}
    env.pop("PYOPENGL_PLATFORM", None)
    try:
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def select_gl_backend() -> str:
    """Choose the headless OpenGL backend before MuJoCo is imported; returns it.

    ``$MUJOCO_GL`` wins when set. Otherwise EGL, or OSMesa when EGL cannot create a context.
    """
    if os.environ.get("MUJOCO_GL"):
        return os.environ["MUJOCO_GL"].strip().lower()
    backend = "egl" if _probe_gl("egl") else "osmesa"
    os.environ["MUJOCO_GL"] = backend
    return backend


GL_BACKEND = select_gl_backend()

import mujoco  # noqa: E402  (MUJOCO_GL must be set before the import)


def _gl_context_class() -> Any:
    """The MuJoCo GLContext class of :data:`GL_BACKEND` (chosen explicitly, so it does not matter
    whether ``mujoco`` was imported before ``MUJOCO_GL`` was set)."""
    if GL_BACKEND == "egl":
        from mujoco.egl import GLContext
    elif GL_BACKEND == "osmesa":
        from mujoco.osmesa import GLContext
    else:
        from mujoco.rendering.classic.gl_context import GLContext
    return GLContext


class RenderError(RuntimeError):
    """The renderer cannot start (no OpenGL) or was given bad input; the message says the fix."""


def depth_to_mm(depth_m: np.ndarray, min_m: float = D435I_MIN_RANGE_M, max_m: float = D435I_MAX_RANGE_M) -> np.ndarray:
    """Depth in metres → 16UC1 millimetres as realsense-ros publishes it.

    Args:
        depth_m: float (H, W) metres; 0, NaN or inf mean 'no return'.
        min_m: closest valid depth, m; nearer values become 0 (invalid), as the D435i does.
        max_m: farthest valid depth, m; farther values become 0.

    Returns:
        uint16 (H, W) millimetres, 0 = invalid / out of range.
    """
    d = np.asarray(depth_m, dtype=np.float32)
    with np.errstate(invalid="ignore"):
        ok = (d >= min_m) & (d <= min(max_m, 65.535))  # NaN compares False
    with np.errstate(invalid="ignore", over="ignore"):
        mm = np.where(ok, d * np.float32(1000.0) + np.float32(0.5), np.float32(0.0))
    return mm.astype(np.uint16)


# --- scene → MJCF -----------------------------------------------------------------------------------
#: Wall paints (muted indoor colours), laid out along the u axis of the wall texture. A wall's
#: colour is a smooth function of where it stands (value noise on a 5 m grid, :func:`_wall_u`),
#: so a room or corridor has a consistent look, neighbouring places differ, and there are no
#: abrupt colour stripes around a round room.
WALL_PALETTE: tuple[tuple[float, float, float], ...] = (
    (0.86, 0.82, 0.72),  # cream
    (0.62, 0.74, 0.82),  # light blue
    (0.80, 0.66, 0.60),  # terracotta
    (0.70, 0.80, 0.64),  # sage
    (0.84, 0.76, 0.52),  # ochre
    (0.74, 0.70, 0.82),  # lavender
    (0.90, 0.90, 0.88),  # white
    (0.66, 0.64, 0.60),  # grey
)
#: Shirt colours of the humans (saturated, so people stand out from the walls).
SHIRT_PALETTE: tuple[tuple[float, float, float], ...] = (
    (0.85, 0.10, 0.10),
    (0.10, 0.35, 0.85),
    (0.10, 0.65, 0.20),
    (0.95, 0.55, 0.05),
    (0.60, 0.15, 0.70),
    (0.05, 0.70, 0.75),
    (0.90, 0.85, 0.10),
    (0.90, 0.30, 0.60),
)
SKIN = (0.87, 0.68, 0.55)
TROUSERS = (0.18, 0.20, 0.28)
FLOOR_TILE_M = 2.0
"""The floor texture repeats every 2 m."""
HUMAN_HEIGHT_M = 1.7
HUMAN_RADIUS_M = 0.3


WALL_CELL_M = 5.0
TEXTURE_SEED = 20250314


def _hash01(ix: np.ndarray, iy: np.ndarray, floor: int) -> np.ndarray:
    """Deterministic pseudo-random value in [0, 1] per integer grid node (and floor)."""
    h = (ix.astype(np.int64) * 73856093) ^ (iy.astype(np.int64) * 19349663) ^ (int(floor) * 83492791)
    h = (h ^ (h >> 13)) * 1274126177
    return ((h ^ (h >> 16)) & 0xFFFF).astype(np.float64) / 65535.0


def _wall_u(xy: np.ndarray, floor: int) -> np.ndarray:
    """Texture u (palette position in [0.02, 0.98]) of walls at map points (N, 2): bilinear value noise on a 5 m grid."""
    g = xy / WALL_CELL_M
    i0 = np.floor(g).astype(np.int64)
    f = g - i0
    f = f * f * (3 - 2 * f)  # smoothstep
    v00 = _hash01(i0[:, 0], i0[:, 1], floor)
    v10 = _hash01(i0[:, 0] + 1, i0[:, 1], floor)
    v01 = _hash01(i0[:, 0], i0[:, 1] + 1, floor)
    v11 = _hash01(i0[:, 0] + 1, i0[:, 1] + 1, floor)
    v = (v00 * (1 - f[:, 0]) + v10 * f[:, 0]) * (1 - f[:, 1]) + (v01 * (1 - f[:, 0]) + v11 * f[:, 0]) * f[:, 1]
    return 0.02 + 0.96 * v


def wall_texture(width: int = 256, height: int = 128) -> np.ndarray:
    """Wall texture, uint8 (H, W, 3): u (columns) runs through :data:`WALL_PALETTE`, v (rows, row 0 = floor)
    holds a dark skirting board (bottom 4 %) and faint plaster noise."""
    rng = np.random.default_rng(TEXTURE_SEED)
    pal = np.array(WALL_PALETTE)
    x = np.linspace(0, len(pal) - 1, width)
    k = np.minimum(np.floor(x).astype(int), len(pal) - 2)
    w = (x - k)[:, None]
    row = pal[k] * (1 - w) + pal[k + 1] * w  # (W, 3)
    img = np.repeat(row[None], height, axis=0)
    img *= 1.0 + rng.normal(0.0, 0.01, (height, width, 1))
    skirting = max(1, int(round(0.04 * height)))
    img[:skirting] = (0.30, 0.24, 0.20)
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


def floor_texture(size: int = 256, planks: int = 10) -> np.ndarray:
    """Wooden floor texture, uint8 (size, size, 3): ``planks`` boards along u with staggered joints,
    per-board tone, grain noise and dark seams (tiled every 2 m on the floor)."""
    rng = np.random.default_rng(TEXTURE_SEED + 1)
    img = np.empty((size, size, 3))
    board = size // planks
    base = np.array([0.70, 0.54, 0.38])
    for b in range(planks):
        rows = slice(b * board, (b + 1) * board if b < planks - 1 else size)
        offset = rng.integers(0, size)
        tone = 1.0 + rng.normal(0.0, 0.08)
        n = img[rows].shape[0]
        grain = 1.0 + 0.05 * np.sin(np.linspace(0, rng.uniform(20, 40), size) + rng.uniform(0, 6))[None, :] + rng.normal(0, 0.03, (n, size))
        img[rows] = base * tone * grain[:, :, None]
        img[rows.start, :] *= 0.55  # seam between boards
        img[rows, offset] *= 0.55  # board end joint
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


def _f(v: float) -> str:
    return f"{v:.4f}".rstrip("0").rstrip(".") if v != 0 else "0"


def _rgba(c: tuple[float, float, float], a: float = 1.0) -> str:
    return f"{_f(c[0])} {_f(c[1])} {_f(c[2])} {_f(a)}"


@dataclass(frozen=True)
class FloorGeometry:
    """What the renderer draws of one floor.

    Attributes:
        index: floor index.
        z: floor height, m (map frame).
        walls: (K, 2, 2) float64 wall segments, map xy, m.
        area: the floor's own walkable area (shapely geometry, map xy) -- the floor slab and the
            ceiling are drawn over it; ``None`` = the walls' bounding box.
        ceiling_m: ceiling (and wall) height above the floor, m.
        tops: (K,) absolute z of each wall's top, m (:func:`~havln_robot.sim.scene.drawn_walls`: a wall
            under a flight of stairs ends there); None = ``z + ceiling_m`` for all.
    """

    index: int
    z: float
    walls: np.ndarray
    area: Any
    ceiling_m: float
    tops: np.ndarray | None = None

    def wall_tops(self) -> np.ndarray:
        """(K,) absolute z of each wall's top, m."""
        return np.full(len(self.walls), self.z + self.ceiling_m) if self.tops is None else np.asarray(self.tops, dtype=np.float64)


@dataclass(frozen=True)
class RampGeometry:
    """A stairs ramp: ``polygon`` (shapely, map xy) whose ground height is ``z_at(x, y)`` (m)."""

    polygon: Any
    z_at: Any


def scene_floors(scene: Any) -> list[FloorGeometry]:
    """Extract the floors of a ``havln_robot.sim.scene.Scene`` (``floors[i].index/.z/.own``,
    ``wall_segments(i)``, ``wall_height``) as :class:`FloorGeometry`.

    Matterport3D stairs give small 'floors' (landings) a few decimetres above or below a room and
    overlapping it. A wall of one floor is not drawn where it stands inside the walkable area of
    another floor less than a wall height away in z: there is walkable space there, not a wall
    (otherwise it would hover in the room below or cut through the landing). Nor where it would
    rise through a flight of stairs (a lower storey's wall across the corridor of the flight above
    it). One rule for the renderer and the Gazebo world: :func:`~havln_robot.sim.scene.drawn_walls`.

    Raises:
        RenderError: the scene has no floors.
    """
    from havln_robot.sim.scene import drawn_walls

    floors = list(getattr(scene, "floors", []) or [])
    if not floors:
        raise RenderError(f"scene {getattr(scene, 'name', '?')}: no floors to render")
    wall_h = float(getattr(scene, "wall_height", 2.5))
    out = []
    for k, fl in enumerate(floors):
        area = getattr(fl, "own", None)
        area = getattr(fl, "free", None) if area is None else area
        segs, tops = drawn_walls(scene, k)
        out.append(FloorGeometry(int(getattr(fl, "index", k)), float(fl.z), segs, area, wall_h, tops))
    return out


def scene_ramps(scene: Any) -> list[RampGeometry]:
    """The stairs ramps of a scene (``scene.ramps[i].polygon`` and ``.z_at``); empty when it has none."""
    return [RampGeometry(r.polygon, r.z_at) for r in (getattr(scene, "ramps", None) or [])]


# --- triangle meshes (MuJoCo mesh assets; winding counter-clockwise seen from outside) -----------
def wall_faces(segs: np.ndarray, half_t: float = WALL_THICKNESS_M / 2.0) -> tuple[np.ndarray, np.ndarray]:
    """The two long vertical faces the renderer draws along each wall segment, seen from above: a
    ``2 * half_t`` thick wall centred on the segment, its ends extended by ``2 * half_t`` so that
    corners close (the extensions also stick out past a corner that juts into the free space).

    Args:
        segs: (K, 2, 2) wall segments a -> b, map xy, m.
        half_t: half the wall thickness, m.

    Returns:
        ((K', 2, 2, 2) faces, map xy, m: ``[k, 0]`` the face on the right of a -> b, ``[k, 1]`` the
        one on its left, each as its two end points (a end first); (K,) bool mask of the segments
        kept, those longer than 0.1 mm).
    """
    segs = np.asarray(segs, dtype=np.float64).reshape(-1, 2, 2)
    p0, p1 = segs[:, 0, :], segs[:, 1, :]
    d = p1 - p0
    length = np.linalg.norm(d, axis=1)
    keep = length > 1e-4
    p0, p1, d, length = p0[keep], p1[keep], d[keep], length[keep]
    d = d / length[:, None]
    n = np.stack([-d[:, 1], d[:, 0]], axis=1)
    a, b = p0 - d * 2 * half_t, p1 + d * 2 * half_t  # overlap the neighbours: no cracks at corners
    right = np.stack([a - n * half_t, b - n * half_t], axis=1)
    left = np.stack([a + n * half_t, b + n * half_t], axis=1)
    return np.stack([right, left], axis=1), keep


def _wall_quads(segs: np.ndarray, z0: float, z1: Any, half_t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The two long faces (:func:`wall_faces`) of a ``2*half_t`` thick wall along each segment (K, 2, 2),
    from ``z0`` to ``z1`` (m: one height, or (K,) per segment). Tops, bottoms and end caps are never seen (ceiling, floor and the
    neighbouring wall hide them) and are left out: 8 vertices, 4 triangles each.

    Returns:
        vertices (8K', 3), faces (4K', 3), and the (K,) mask of segments kept (length > 0.1 mm)."""
    fc, keep = wall_faces(segs, half_t)
    corners = np.concatenate([fc[:, 0], fc[:, 1, ::-1]], axis=1)  # (K,4,2) CCW from above
    k = len(corners)
    v = np.empty((k, 8, 3))
    v[:, :4, :2] = corners
    v[:, 4:, :2] = corners
    v[:, :4, 2] = z0
    v[:, 4:, 2] = np.broadcast_to(np.asarray(z1, dtype=np.float64), (len(keep),))[keep][:, None]
    faces = np.array([[0, 1, 5], [0, 5, 4], [2, 3, 7], [2, 7, 6]])  # outward: side -n and side +n
    f = faces[None, :, :] + (np.arange(k) * 8)[:, None, None]
    return v.reshape(-1, 3), f.reshape(-1, 3), keep


def _triangles(geom: Any) -> np.ndarray:
    """Constrained Delaunay triangles (T, 3, 2) of a shapely (Multi)Polygon, counter-clockwise."""
    import shapely

    tris = []
    for g in getattr(geom, "geoms", [geom]):
        if g.is_empty or g.geom_type != "Polygon":
            continue
        for t in shapely.constrained_delaunay_triangles(g).geoms:
            c = np.asarray(t.exterior.coords, dtype=np.float64)[:3, :2]
            tris.append(c)
    if not tris:
        return np.zeros((0, 3, 2))
    t = np.stack(tris)
    cross = (t[:, 1, 0] - t[:, 0, 0]) * (t[:, 2, 1] - t[:, 0, 1]) - (t[:, 1, 1] - t[:, 0, 1]) * (t[:, 2, 0] - t[:, 0, 0])
    t[cross < 0] = t[cross < 0][:, ::-1]
    return t[np.abs(cross) > 1e-10]


def _surface(tris: np.ndarray, z: Any, up: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """A one-sided surface of triangles (T, 3, 2) at height ``z`` (a number, or a function of
    (x, y) for ramps), facing up (floors, ramps) or down (ceilings)."""
    t = len(tris)
    v = np.empty((t, 3, 3))
    v[:, :, :2] = tris
    if callable(z):
        v[:, :, 2] = np.array([[z(x, y) for x, y in tri] for tri in tris]).reshape(t, 3)
    else:
        v[:, :, 2] = float(z)
    f = np.arange(t * 3).reshape(t, 3)
    if not up:
        f = f[:, ::-1]
    return v.reshape(-1, 3), np.ascontiguousarray(f)


def _bbox_area(segs: np.ndarray) -> Any:
    import shapely

    if len(segs):
        pts = segs.reshape(-1, 2)
        lo, hi = pts.min(axis=0) - 0.2, pts.max(axis=0) + 0.2
    else:
        lo, hi = np.array([-10.0, -10.0]), np.array([10.0, 10.0])
    return shapely.box(lo[0], lo[1], hi[0], hi[1])


@dataclass(frozen=True)
class MeshPart:
    """One static triangle mesh of the scene: ``name``, ``material``, vertices (N, 3) m (map frame),
    faces (T, 3) int (counter-clockwise seen from outside), texture coordinates (N, 2) or None;
    for a scan mesh (``--scenes``) its own ``texture`` (uint8 (h, w, 3) RGB) or base colour ``rgba``
    (0-1), which give the part a material of its own named ``material``."""

    name: str
    material: str
    vertices: np.ndarray
    faces: np.ndarray
    uv: np.ndarray | None = None
    texture: np.ndarray | None = None
    rgba: tuple[float, float, float, float] | None = None


def scene_meshes(floors: list[FloorGeometry], ramps: list[RampGeometry] | None = None) -> list[MeshPart]:
    """The static geometry of a scene merged into few meshes: per floor one for the walls, one for
    the floor and one for the ceiling (both with the stairwell openings cut out,
    :func:`havln_robot.sim.scene.stairwell_cut`), plus one per stairs ramp. Walls come first in the list: drawn
    before the floor and ceiling they hide most of them from the depth test (less overdraw for a
    software rasteriser)."""
    parts: list[MeshPart] = []
    t = WALL_THICKNESS_M / 2.0
    for fl in floors:
        if len(fl.walls):
            v, f, keep = _wall_quads(fl.walls, fl.z, fl.wall_tops(), t)
            if len(f):
                u = np.repeat(_wall_u(fl.walls[keep].mean(axis=1), fl.index), 8)
                vv = np.tile(np.array([0.0, 0, 0, 0, 1, 1, 1, 1]), len(u) // 8)
                parts.append(MeshPart(f"walls_{fl.index}", "wall", v, f, np.stack([u, vv], axis=1)))
    from havln_robot.sim.scene import stairwell_cut

    for fl in floors:
        area = fl.area if fl.area is not None and not fl.area.is_empty else _bbox_area(fl.walls)
        # stairwell openings: no slab or ceiling across a flight with less than headroom over it
        tris = _triangles(stairwell_cut(area, fl.z, ramps))
        if len(tris):
            v, f = _surface(tris, fl.z, up=True)
            parts.append(MeshPart(f"floor_{fl.index}", "floor", v, f, v[:, :2] / FLOOR_TILE_M))
        tris = _triangles(stairwell_cut(area, fl.z + fl.ceiling_m, ramps))
        if len(tris):
            v, f = _surface(tris, fl.z + fl.ceiling_m, up=False)
            parts.append(MeshPart(f"ceiling_{fl.index}", "ceiling", v, f))
    for i, rp in enumerate(ramps or []):
        tris = _triangles(rp.polygon)
        if len(tris):
            v, f = _surface(tris, rp.z_at, up=True)
            parts.append(MeshPart(f"ramp_{i}", "stairs", v, f, v[:, :2] / FLOOR_TILE_M * 2.0))
    return parts


#: scene object → its mesh parts (static geometry is the same for every episode of a scan).
_GEOMETRY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: scene object → :func:`scene_floors` (the renderer's meshes and the batch simulator's walls).
_FLOORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_GEOMETRY_LOCK = threading.Lock()


def _cached(cache: weakref.WeakKeyDictionary, scene: Any, make: Any) -> Any:
    """``make(scene)``, kept in ``cache`` per scene object (thread-safe; not kept for a scene that is
    not weak-referenceable)."""
    with _GEOMETRY_LOCK:
        try:
            out = cache.get(scene)
        except TypeError:
            return make(scene)
    if out is None:
        out = make(scene)
        with _GEOMETRY_LOCK:
            cache[scene] = out
    return out


def cached_scene_floors(scene: Any) -> list[FloorGeometry]:
    """:func:`scene_floors` of ``scene``, computed once per scene object (thread-safe): the walls the
    renderer draws, also read by the batch simulator (:meth:`havln_robot.sim.closed_loop.ClosedLoop._wall_segments`).

    Raises:
        RenderError: the scene has no floors.
    """
    return _cached(_FLOORS, scene, scene_floors)


def cached_scene_meshes(scene: Any) -> list[MeshPart]:
    """:func:`scene_meshes` of ``scene``, computed once per scene object (thread-safe). A scene with
    a scan mesh (``render_parts()``, :class:`havln_robot.sim.mesh_scene.MeshScene`) gives its textured
    parts instead of procedural walls."""
    mesh_parts = getattr(scene, "render_parts", None)
    if mesh_parts is not None:
        return [
            MeshPart(p.name, f"mat_{p.name}", p.vertices, p.faces, p.uv if p.texture is not None else None, p.texture, p.rgba)
            for p in mesh_parts()
        ]
    return _cached(_GEOMETRY, scene, lambda s: scene_meshes(cached_scene_floors(s), scene_ramps(s)))


def build_mjcf(n_humans: int, width: int = 640, height: int = 480, name: str = "scene") -> str:
    """MJCF skeleton of a scene: rendering options, materials, lights and ``n_humans`` mocap humans
    (``human_<i>``: legs, torso, arms, head; 1.7 m tall, 0.3 m footprint radius), parked below the
    scene until posed. The static meshes and the textures ``wall_tex`` / ``floor_tex`` are added by
    :func:`compile_model`.

    Args:
        n_humans: number of human mocap bodies.
        width: largest image width rendered, px (offscreen buffer size).
        height: largest image height rendered, px.
        name: model name.

    Returns:
        The MJCF XML string.
    """
    r = HUMAN_RADIUS_M
    humans: list[str] = []
    for i in range(n_humans):
        shirt = SHIRT_PALETTE[i % len(SHIRT_PALETTE)]
        humans += [
            f'    <body name="human_{i}" mocap="true" pos="0 0 -100">',
            f'      <geom name="human_{i}_leg_l" type="capsule" fromto="0 0.08 0.1 0 0.08 0.86" size="0.085" rgba="{_rgba(TROUSERS)}" contype="0" conaffinity="0"/>',
            f'      <geom name="human_{i}_leg_r" type="capsule" fromto="0 -0.08 0.1 0 -0.08 0.86" size="0.085" rgba="{_rgba(TROUSERS)}" contype="0" conaffinity="0"/>',
            f'      <geom name="human_{i}_torso" type="capsule" fromto="0 0 0.98 0 0 1.30" size="0.19" rgba="{_rgba(shirt)}" contype="0" conaffinity="0"/>',
            f'      <geom name="human_{i}_arm_l" type="capsule" fromto="0 {_f(r - 0.07)} 1.40 0.04 {_f(r - 0.05)} 0.84" size="0.055" rgba="{_rgba(shirt)}" contype="0" conaffinity="0"/>',
            f'      <geom name="human_{i}_arm_r" type="capsule" fromto="0 {_f(-(r - 0.07))} 1.40 0.04 {_f(-(r - 0.05))} 0.84" size="0.055" rgba="{_rgba(shirt)}" contype="0" conaffinity="0"/>',
            f'      <geom name="human_{i}_head" type="sphere" pos="0.02 0 1.585" size="0.115" rgba="{_rgba(SKIN)}" contype="0" conaffinity="0"/>',
            f'      <geom name="human_{i}_nose" type="sphere" pos="0.125 0 1.59" size="0.025" rgba="{_rgba(SKIN)}" contype="0" conaffinity="0"/>',
            "    </body>",
        ]
    head = [
        f'<mujoco model="{name}">',
        '  <compiler angle="radian"/>',
        '  <statistic extent="1" center="0 0 0"/>',
        "  <visual>",
        f'    <global offwidth="{max(width, 64)}" offheight="{max(height, 64)}" fovy="45"/>',
        '    <quality shadowsize="0" offsamples="0"/>',
        '    <map znear="0.03" zfar="60"/>',
        '    <headlight ambient="0.4 0.4 0.4" diffuse="0.3 0.3 0.3" specular="0 0 0"/>',
        "  </visual>",
        "  <asset>",
        '    <texture name="stairs_tex" type="2d" builtin="checker" rgb1="0.55 0.50 0.46" rgb2="0.45 0.41 0.38" width="64" height="64"/>',
        '    <material name="floor" texture="floor_tex" specular="0" shininess="0"/>',
        '    <material name="ceiling" rgba="0.95 0.95 0.94 1" specular="0"/>',
        '    <material name="stairs" texture="stairs_tex" specular="0"/>',
        '    <material name="wall" texture="wall_tex" specular="0"/>',
        "  </asset>",
        "  <worldbody>",
        '    <light directional="true" pos="0 0 10" dir="0.3 0.5 -1" diffuse="0.5 0.5 0.5" specular="0 0 0" castshadow="false"/>',
        '    <light directional="true" pos="0 0 10" dir="-0.5 -0.2 -0.6" diffuse="0.25 0.25 0.25" specular="0 0 0" castshadow="false"/>',
        '    <light directional="true" pos="0 0 -10" dir="0.2 -0.3 1" diffuse="0.3 0.3 0.3" specular="0 0 0" castshadow="false"/>',
    ]
    return "\n".join([*head, *humans, "  </worldbody>", "</mujoco>"])


def compile_model(xml: str, parts: list[MeshPart]) -> Any:
    """Compile :func:`build_mjcf` text plus the static meshes into a ``mujoco.MjModel``, adding the
    generated textures (:func:`wall_texture`, :func:`floor_texture`)."""
    spec = mujoco.MjSpec.from_string(xml)
    for name, img in (("wall_tex", _WALL_TEX), ("floor_tex", _FLOOR_TEX)):
        tex = spec.add_texture()
        tex.name = name
        tex.type = mujoco.mjtTexture.mjTEXTURE_2D
        tex.height, tex.width, tex.nchannel = img.shape[0], img.shape[1], 3
        tex.colorspace = mujoco.mjtColorSpace.mjCOLORSPACE_LINEAR  # the bytes are the colours shown
        tex.data = img.tobytes()
    for part in parts:
        if part.texture is not None or part.rgba is not None:  # a scan mesh part: its own material
            mat = spec.add_material()
            mat.name = part.material
            mat.specular, mat.shininess = 0.0, 0.0
            if part.texture is not None:
                img = np.ascontiguousarray(part.texture[::-1])  # MuJoCo's row 0 is v = 0 (bottom; OpenGL UVs)
                tex = spec.add_texture()
                tex.name = f"tex_{part.name}"
                tex.type = mujoco.mjtTexture.mjTEXTURE_2D
                tex.height, tex.width, tex.nchannel = img.shape[0], img.shape[1], 3
                tex.colorspace = mujoco.mjtColorSpace.mjCOLORSPACE_LINEAR
                tex.data = img.tobytes()
                mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = tex.name
            else:
                mat.rgba = list(part.rgba)
        mesh = spec.add_mesh()
        mesh.name = part.name
        mesh.uservert = part.vertices.astype(np.float32).ravel()
        mesh.userface = part.faces.astype(np.int32).ravel()
        if part.uv is not None:
            mesh.usertexcoord = part.uv.astype(np.float32).ravel()
        mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL
    # static geoms go before the bodies' geoms (the humans): insert them into the world body first
    for part in parts:
        g = spec.worldbody.add_geom()
        g.name, g.type, g.meshname, g.material = part.name, mujoco.mjtGeom.mjGEOM_MESH, part.name, part.material
        g.contype = g.conaffinity = 0
    return spec.compile()


_WALL_TEX = wall_texture()
_FLOOR_TEX = floor_texture()


# --- the renderer -----------------------------------------------------------------------------------
class Renderer:
    """Colour + depth images of a scene seen from the Go2's head camera.

    Create and use it from ONE thread (the OpenGL context is bound to it).

    Args:
        scene: ``havln_robot.sim.scene.Scene`` (``floors``, ``wall_segments(i)``, ``wall_height``).
        crowd: ``havln_robot.sim.humans.Crowd`` (``humans``, ``positions(t)`` (M, 3) map frame with
            z = ground under the feet, ``headings(t)`` (M,) rad), or ``None`` for no humans.
        width, height: image size, px (default 640x480, the D435i colour stream used).
        hfov_deg: horizontal field of view, deg (default 69.4, D435i colour).
        camera_height_m: optical centre above the ground under the body, m (Go2 head, see robot.py).
        camera_forward_m: optical centre ahead of base_link, m.
        camera_left_m: optical centre left of base_link, m.
        camera_pitch_rad: mount elevation, rad (positive = up), added to every view's pitch.

    Attributes:
        intrinsics: :class:`Intrinsics` of the images.
        model: the MuJoCo model (``mujoco.MjModel``).

    Raises:
        RenderError: no OpenGL backend could start (message says how to choose one).
    """

    def __init__(
        self,
        scene: Any,
        crowd: Any = None,
        width: int = 640,
        height: int = 480,
        hfov_deg: float = D435I_HFOV_DEG,
        camera_height_m: float = GO2_CAMERA_HEIGHT_M,
        camera_forward_m: float = GO2_CAMERA_FORWARD_M,
        camera_left_m: float = 0.0,
        camera_pitch_rad: float = 0.0,
    ) -> None:
        self.intrinsics = Intrinsics.from_hfov(int(width), int(height), float(hfov_deg))
        self.scene = scene
        self.crowd = crowd
        self.camera_height_m = float(camera_height_m)
        self.camera_forward_m = float(camera_forward_m)
        self.camera_left_m = float(camera_left_m)
        self.camera_pitch_rad = float(camera_pitch_rad)
        self.n_humans = len(getattr(crowd, "humans", []) or []) if crowd is not None else 0
        xml = build_mjcf(self.n_humans, self.intrinsics.width, self.intrinsics.height, name=str(getattr(scene, "name", "scene")))
        self.model = compile_model(xml, cached_scene_meshes(scene))
        self.data = mujoco.MjData(self.model)
        self.model.vis.global_.fovy = self.intrinsics.vfov_deg
        mujoco.mj_forward(self.model, self.data)  # also places the lights (mj_camlight)
        self._gl = None
        self._ctx = None
        try:
            self._gl = _gl_context_class()(self.intrinsics.width, self.intrinsics.height)
            self._gl.make_current()
            self._ctx = mujoco.MjrContext(self.model, mujoco.mjtFontScale.mjFONTSCALE_100.value)
        except Exception as exc:  # EGL/OSMesa errors come in many types
            self.close()
            raise RenderError(
                f"cannot create an OpenGL context with MUJOCO_GL={GL_BACKEND!r} ({type(exc).__name__}: {exc}); "
                "set MUJOCO_GL=egl or MUJOCO_GL=osmesa (needs libEGL / libOSMesa)"
            ) from None
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, self._ctx)
        self._ctx.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZEROFAR
        self._scene = mujoco.MjvScene(self.model, maxgeom=self.model.ngeom + 100)
        self._opt = mujoco.MjvOption()
        self._pert = mujoco.MjvPerturb()
        self._cam = mujoco.MjvCamera()
        self._cam.type = mujoco.mjtCamera.mjCAMERA_FREE
        self._rect = mujoco.MjrRect(0, 0, self.intrinsics.width, self.intrinsics.height)
        self._rgb = np.empty((self.intrinsics.height, self.intrinsics.width, 3), np.uint8)
        self._depth = np.empty((self.intrinsics.height, self.intrinsics.width), np.float32)
        self._scene.flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = False
        self._scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = False
        self._scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = False
        self._scene.flags[mujoco.mjtRndFlag.mjRND_HAZE] = False
        self._scene.flags[mujoco.mjtRndFlag.mjRND_POST_PROCESSING] = False
        extent = self.model.stat.extent
        self._znear = float(np.float32(self.model.vis.map.znear * extent))
        self._zfar = float(np.float32(self.model.vis.map.zfar * extent))

    # -------------------------------------------------------------------
    def camera_pose(self, pose: tuple[float, float, float, float], pitch_rad: float = 0.0) -> tuple[np.ndarray, float, float]:
        """Camera optical centre (3,) in the map frame and its yaw, pitch (rad) for a body pose.

        Args:
            pose: (x, y, z, yaw) of base_link in the map frame; z = ground height under the body.
            pitch_rad: camera pitch over the mount's (LOOK_UP / LOOK_DOWN), rad, positive looking up.
        """
        x, y, z, yaw = (float(v) for v in pose)
        c, s = math.cos(yaw), math.sin(yaw)
        fx, fy = self.camera_forward_m, self.camera_left_m
        pos = np.array([x + c * fx - s * fy, y + s * fx + c * fy, z + self.camera_height_m])
        return pos, yaw, float(pitch_rad) + self.camera_pitch_rad

    def set_humans(self, t: float) -> None:
        """Place the human bodies at their positions and headings at sim time ``t`` (s)."""
        if not self.n_humans:
            return
        pos = np.asarray(self.crowd.positions(t), dtype=np.float64).reshape(-1, 3)
        head = np.asarray(self.crowd.headings(t), dtype=np.float64).reshape(-1)
        n = min(self.n_humans, len(pos))
        self.data.mocap_pos[:n] = pos[:n]
        half = head[:n] / 2.0
        self.data.mocap_quat[:n] = np.stack([np.cos(half), np.zeros(n), np.zeros(n), np.sin(half)], axis=1)
        self.data.mocap_pos[n:] = (0.0, 0.0, -100.0)
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)

    def lidar_cloud(
        self,
        pose: tuple[float, float, float, float],
        mount: Any,
        t: float = 0.0,
        max_m: float = 8.0,
        elevation_deg: tuple[float, float] = GENERIC_ELEVATION_DEG,
    ) -> np.ndarray:
        """A simulated LiDAR sweep of the scene and its people at time ``t``: (N, 3) float32 points in
        the sensor's frame, m (rays :func:`~havln_robot.motion.lidar.sweep_directions`, cast by
        ``mujoco.mj_multiRay`` on the model the camera renders; no return = no point).

        Args:
            pose: (x, y, z, yaw) of base_link in the map frame; z = ground height under the body.
            mount: a :class:`~havln_robot.motion.lidar.LidarMount` (the sensor relative to the ground under base_link).
            t: sim time of the people's positions, s.
            max_m: the sensor's range, m.
            elevation_deg: the sweep's elevation range in the sensor's own frame, deg.
        """
        d_s, origin, vec = mount.sweep_rays(pose[0], pose[1], pose[3], float(pose[2]), elevation_deg=elevation_deg)
        self.set_humans(t)
        n = len(vec)
        geom = np.zeros(n, dtype=np.int32)
        dist = np.zeros(n, dtype=np.float64)
        mujoco.mj_multiRay(self.model, self.data, origin, vec.reshape(-1), None, 1, -1, geom, dist, None, n, float(max_m))
        ok = (geom >= 0) & (dist >= 0.0) & (dist <= max_m)
        return (d_s[ok] * dist[ok, None]).astype(np.float32)

    def render(self, pose: tuple[float, float, float, float], pitch_rad: float = 0.0, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Render colour and aligned depth.

        Args:
            pose: (x, y, z, yaw) of base_link, map frame (m, rad; z = ground under the body).
            pitch_rad: camera elevation, rad, positive looking up (LOOK_UP).
            t: sim time, s (poses the humans).

        Returns:
            rgb: uint8 (H, W, 3); depth: float32 (H, W) metres along the optical axis, 0 = no return.
            Fresh arrays (safe to keep).

        Raises:
            RenderError: the renderer was closed, or the pose is not finite.
        """
        if self._ctx is None:
            raise RenderError("render() after close(): create a new Renderer")
        if not all(math.isfinite(float(v)) for v in (*pose, pitch_rad, t)):
            raise RenderError(f"render: pose/pitch/t must be finite, got pose={pose} pitch={pitch_rad} t={t}")
        self.set_humans(t)
        pos, yaw, pitch = self.camera_pose(pose, pitch_rad)
        cam = self._cam
        fwd = np.array([math.cos(pitch) * math.cos(yaw), math.cos(pitch) * math.sin(yaw), math.sin(pitch)])
        cam.distance = 1.0
        cam.lookat[:] = pos + fwd
        cam.azimuth = math.degrees(yaw)
        cam.elevation = math.degrees(pitch)
        mujoco.mjv_updateScene(self.model, self.data, self._opt, self._pert, cam, mujoco.mjtCatBit.mjCAT_ALL.value, self._scene)
        self._gl.make_current()
        mujoco.mjr_render(self._rect, self._scene, self._ctx)
        mujoco.mjr_readPixels(self._rgb, self._depth, self._rect, self._ctx)
        rgb = np.ascontiguousarray(self._rgb[::-1])
        depth = self._linear_depth(self._depth[::-1])
        return rgb, depth

    def _linear_depth(self, buf: np.ndarray) -> np.ndarray:
        """Reverse-Z depth buffer (1 near .. 0 far) → metres along the optical axis (float32).

        Reverse-Z perspective: ``buf = near (far - z) / (z (far - near))``, so
        ``z = near far / (buf (far - near) + near)``; float32 keeps < 1e-6 relative error here.
        """
        near, far = np.float32(self._znear), np.float32(self._zfar)
        den = buf * (far - near)
        den += near
        z = np.divide(near * far, den, dtype=np.float32)
        z[buf <= 0.0] = 0.0  # far plane: nothing hit
        return z

    def close(self) -> None:
        """Free the OpenGL resources. Idempotent."""
        if self._ctx is not None and self._gl is not None:
            try:
                self._gl.make_current()
                self._ctx.free()
            except Exception:
                pass
        self._ctx = None
        if self._gl is not None:
            try:
                self._gl.free()
            except Exception:
                pass
        self._gl = None

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
