"""Scenes from the user's textured scan meshes (Matterport3D / HM3D ``.glb``, Habitat layout).

``--scenes DIR`` (eval, replay, train, bench sim) and sim_node's ``scenes_dir`` parameter point at a
folder in the Habitat layout, ``DIR/<scan>/<scan>.glb`` (a ``.navmesh`` next to it is not needed
and not read). :func:`load_scene` then returns a :class:`MeshScene`: the same
:class:`~havln_robot.sim.scene.Scene` interface (floors, stairs ramps, ``support``, ``region``,
``first_contact``, ...), so World, the expert, people placement, eval, replay, training and sim_node
run unchanged, but

* **rendering** draws the mesh with its textures (:meth:`MeshScene.render_parts`, used by
  :class:`havln_robot.sim.render.Renderer` instead of the procedural walls);
* **collisions** use free space cut from the mesh: per floor, an occupancy grid
  (:data:`DEFAULT_CELL_M`) at the robot's height band -- a cell is free when the mesh has an
  upward surface within :data:`FLOOR_BAND_M` of the floor's height there and nothing between
  :data:`STEP_M` and :data:`BODY_TOP_M` above that surface -- turned into shapely polygons;
* **walkable distance** (NE) is a grid geodesic over those grids (:class:`MeshGoalDistance`):
  8-connected Dijkstra on a :data:`GEO_CELL_M` grid per floor, floors joined by the navigation
  graph's stairs edges. No navmesh library is installable here, so this is an approximation of
  Habitat's navmesh geodesic (docs/sim.md says how far it goes).

Stairs stay the navigation graph's ramps (the stair treads are not walked on one by one; the ramp
joins the grids of the two floors). Frames: Habitat meshes are **y-up**, the navigation graph and
the map frame **z-up**; a vertex (hx, hy, hz) of a y-up mesh is map (hx, -hz, hy) (the same
relation as the VLN-CE episodes, docs/sim.md "Frames"). ``up="z"`` reads a mesh already in the
map frame. :meth:`MeshScene.alignment` checks the transform on the graph's viewpoints.

Everything read from the mesh file is data (trimesh's glTF reader); nothing in it runs as code.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import shapely
from shapely.geometry import Point
from shapely.geometry.base import BaseGeometry

from havln_robot.sim.geodesic import Walkable
from havln_robot.sim.scene import DEFAULT_CORRIDOR_WIDTH_M, Floor, Scene, SceneError

#: Occupancy grid cell (m): 5 cm keeps a 0.8 m doorway 0.7-0.8 m wide after quantisation.
DEFAULT_CELL_M: float = 0.05
#: Geodesic grid cell (m): the occupancy grid pooled 2 x 2 (a 50 x 50 m storey = 250 k nodes).
GEO_CELL_M: float = 0.10
#: An upward surface (normal z > 0.7, i.e. slope < 45 deg) within this height (m) of a floor's
#: nominal height is that floor's ground (a floor spans a few dm; storeys are >= ~2.4 m apart).
FLOOR_BAND_M: float = 0.35
#: Geometry up to this height (m) above the ground is stepped over: the Go2 climbs ~0.16 m steps
#: (Unitree Go2 product page, "max climbing height"), rounded up to the 0.2 m a sill/threshold can be.
STEP_M: float = 0.2
#: Top of the robot's height band (m above ground): Go2 standing height 0.40 m (datasheet body
#: envelope, havln_robot/sim/robot.py GO2_HEIGHT_M) + 0.1 m margin. Geometry above it (table tops,
#: shelves) is passed under.
BODY_TOP_M: float = 0.5
#: Surface samples per occupancy cell area (area-weighted, seeded): a wall 1 cell wide and one band
#: (0.3 m) tall gets ~ 18 samples, so a wall is never missed (P ~ e^-18).
SAMPLES_PER_CELL: float = 3.0
#: Cap on surface samples (memory: 12 bytes each).
MAX_SAMPLES: int = 12_000_000
#: Largest texture side (px) handed to the renderer; bigger images are downscaled (Matterport3D
#: glbs carry dozens of 2k textures: ~12 MB each as RGB, 0.75 MB at 512 px; the policy sees 224 px views).
MAX_TEXTURE_PX: int = 1024
#: The y-up (Habitat) -> z-up (map) rotation: map (x, y, z) = (hx, -hz, hy).
HABITAT_TO_MAP = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
#: Alignment check tolerance (m): |mesh floor under a viewpoint - graph ground z|.
ALIGN_TOL_M: float = 0.2
#: Fraction of viewpoints that must pass the alignment check, else the mesh is refused.
ALIGN_MIN_FRACTION: float = 0.8


@dataclass
class SurfacePart:
    """One textured piece of the scene mesh, map frame.

    Attributes:
        name: unique part name.
        vertices: float32 (N, 3) m. faces: int32 (T, 3) (counter-clockwise from outside).
        uv: float32 (N, 2) texture coordinates (OpenGL convention, v up) or None.
        texture: uint8 (h, w, 3) RGB image or None. rgba: base colour (0-1) used without a texture.
    """

    name: str
    vertices: np.ndarray
    faces: np.ndarray
    uv: np.ndarray | None = None
    texture: np.ndarray | None = None
    rgba: tuple[float, float, float, float] = (0.8, 0.8, 0.8, 1.0)


@dataclass
class Alignment:
    """Result of checking the mesh against the navigation graph's viewpoints.

    Attributes:
        n: viewpoints checked. on_floor: those with mesh floor within :data:`ALIGN_TOL_M` of their ground z.
        clear: those whose cell is free of geometry in the body band. camera_height_m: median over
            viewpoints with a mesh floor under them of (ground z + the camera height asked for -
            mesh floor z), m: the camera's height above the mesh floor (0 = ground offset only).
        bad: ids failing either check.
    """

    n: int
    on_floor: int
    clear: int
    camera_height_m: float
    bad: list[str] = field(default_factory=list)


def scene_mesh_path(scenes_dir: str | os.PathLike[str], scan: str) -> Path:
    """``scenes_dir/<scan>/<scan>.glb`` (Habitat MP3D layout), ``scenes_dir/<scan>.glb``, or HM3D's
    ``scenes_dir/<nnnnn>-<scan>/<scan>[.basis].glb`` (Basis-compressed textures are not decoded by
    trimesh: such parts render in their base colour).

    Raises:
        SceneError: neither exists (the message names both and the flag).
    """
    from havln_robot.paths import UnsafePathError, safe_component

    try:
        safe_component(scan, "scan")
    except UnsafePathError as exc:
        raise SceneError(f"{exc}; a scan id names its mesh file") from None
    root = Path(scenes_dir)
    if not root.is_dir():
        raise SceneError(f"--scenes/scenes_dir: {root} is not a folder; give the folder holding <scan>/<scan>.glb")
    cands = [root / scan / f"{scan}.glb", root / f"{scan}.glb"]
    cands += sorted(root.glob(f"*-{scan}/{scan}.glb")) + sorted(root.glob(f"*-{scan}/{scan}.basis.glb"))  # HM3D: 00800-TEEsavR23oF/
    for p in cands:
        if p.is_file():
            return p
    raise SceneError(f"--scenes/scenes_dir: no mesh for scan {scan!r} at {root / scan / (scan + '.glb')}; add it or drop --scenes")


def read_mesh(path: str | os.PathLike[str], up: str = "y") -> list[SurfacePart]:
    """Read a glTF/GLB scene mesh (trimesh) into map-frame :class:`SurfacePart` s.

    Args:
        path: ``.glb`` / ``.gltf`` file.
        up: ``"y"`` (Habitat meshes; rotated by :data:`HABITAT_TO_MAP`) or ``"z"`` (already map frame).

    Raises:
        SceneError: unreadable file, no triangles, or a bad ``up``.
    """
    import trimesh

    if up not in ("y", "z"):
        raise SceneError(f"scenes_up: {up!r} is not 'y' (Habitat meshes) or 'z' (map frame)")
    try:
        sc = trimesh.load(str(path), force="scene")
    except Exception as exc:  # noqa: BLE001 - trimesh raises many types for bad files
        raise SceneError(f"scene mesh {path} is not a readable glTF/GLB ({type(exc).__name__}: {exc}); re-export it") from None
    rot = HABITAT_TO_MAP if up == "y" else np.eye(3)
    parts: list[SurfacePart] = []
    for node in sc.graph.nodes_geometry:
        tf, gname = sc.graph[node]
        g = sc.geometry.get(gname)
        if g is None or not hasattr(g, "faces") or len(g.faces) == 0:
            continue
        v = np.asarray(g.vertices, np.float64) @ np.asarray(tf)[:3, :3].T + np.asarray(tf)[:3, 3]
        v = v @ rot.T
        faces = np.asarray(g.faces, np.int32)
        uv, tex, rgba = None, None, (0.8, 0.8, 0.8, 1.0)
        vis = g.visual
        mat = getattr(vis, "material", None)
        if getattr(vis, "kind", None) == "texture" and mat is not None:
            img = getattr(mat, "baseColorTexture", None) or getattr(mat, "image", None)
            if img is not None and getattr(vis, "uv", None) is not None and len(vis.uv) == len(v):
                img = img.convert("RGB")
                if max(img.size) > MAX_TEXTURE_PX:
                    img.thumbnail((MAX_TEXTURE_PX, MAX_TEXTURE_PX))
                tex = np.asarray(img, np.uint8)
                uv = np.asarray(vis.uv, np.float32)
            bcf = getattr(mat, "baseColorFactor", None)
            if bcf is not None:
                c = np.asarray(bcf, np.float64).ravel()
                c = c / 255.0 if c.max() > 1.0 else c
                rgba = (float(c[0]), float(c[1]), float(c[2]), 1.0)
            elif tex is None and hasattr(mat, "main_color"):
                c = np.asarray(mat.main_color, np.float64) / 255.0
                rgba = (float(c[0]), float(c[1]), float(c[2]), 1.0)
        elif getattr(vis, "kind", None) == "vertex":
            c = np.asarray(vis.vertex_colors, np.float64)[:, :3].mean(axis=0) / 255.0
            rgba = (float(c[0]), float(c[1]), float(c[2]), 1.0)
        parts.append(SurfacePart(f"mesh_{len(parts):04d}", v.astype(np.float32), faces, uv, tex, rgba))
    if not parts:
        raise SceneError(f"scene mesh {path} has no triangles; re-export it with its geometry")
    return parts


def _sample_surface(parts: list[SurfacePart], cell: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Area-weighted random points on all triangles: float32 (S, 3) map frame and (S,) normal z."""
    tri = np.concatenate([p.vertices[p.faces] for p in parts]).astype(np.float64)  # (T, 3, 3)
    e1, e2 = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    cr = np.cross(e1, e2)
    area2 = np.linalg.norm(cr, axis=1)
    keep = area2 > 1e-12
    tri, e1, e2, cr, area2 = tri[keep], e1[keep], e2[keep], cr[keep], area2[keep]
    nz = cr[:, 2] / area2
    total = 0.5 * float(area2.sum())
    n = int(min(MAX_SAMPLES, max(1000, total / (cell * cell) * SAMPLES_PER_CELL)))
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(area2)
    idx = np.searchsorted(cdf, rng.random(n) * cdf[-1])
    idx = np.minimum(idx, len(tri) - 1)
    a, b = rng.random(n), rng.random(n)
    flip = a + b > 1.0
    a[flip], b[flip] = 1.0 - a[flip], 1.0 - b[flip]
    pts = tri[idx, 0] + a[:, None] * e1[idx] + b[:, None] * e2[idx]
    return pts.astype(np.float32), nz[idx].astype(np.float32)


def grid_polygon(mask: np.ndarray, origin: tuple[float, float], cell: float) -> BaseGeometry:
    """Union of the True cells of ``mask`` (H, W) (row = y index, column = x index) as shapely polygons (m).

    Cell (i, j) covers x in [x0 + j cell, x0 + (j+1) cell], y in [y0 + i cell, ...]. Row runs are merged
    with identical runs of the rows above before the union, so a room is a few boxes.
    """
    x0, y0 = origin
    boxes = []
    open_runs: dict[tuple[int, int], int] = {}  # (start, end) -> first row
    for i in range(mask.shape[0] + 1):
        runs: set[tuple[int, int]] = set()
        if i < mask.shape[0]:
            row = np.concatenate([[False], mask[i], [False]])
            d = np.flatnonzero(np.diff(row.astype(np.int8)))
            runs = set(zip(d[0::2].tolist(), d[1::2].tolist(), strict=False))
        for r in list(open_runs):
            if r not in runs:
                i0 = open_runs.pop(r)
                boxes.append(shapely.box(x0 + r[0] * cell, y0 + i0 * cell, x0 + r[1] * cell, y0 + i * cell))
        for r in runs:
            open_runs.setdefault(r, i)
    if not boxes:
        return shapely.Polygon()
    return shapely.union_all(boxes)


class MeshScene(Scene):
    """A :class:`Scene` whose free space, rendering and walkable distance come from a scan mesh.

    Build with :meth:`from_files` (or :func:`load_scene`). Extra attributes: ``mesh_path``,
    ``parts`` (:class:`SurfacePart` list), ``cell`` (m), ``origin`` (x0, y0) m, ``free_grid``
    (F, H, W) bool per floor, ``ground_grid`` (F, H, W) float32 m (NaN: no floor surface).
    """

    flat_floors = False  # the mesh's own surfaces are drawn, at the heights the body stands on

    @classmethod
    def from_files(
        cls,
        connectivity: str | os.PathLike[str],
        mesh: str | os.PathLike[str],
        up: str = "y",
        cell: float = DEFAULT_CELL_M,
        corridor_width: float = DEFAULT_CORRIDOR_WIDTH_M,
    ) -> MeshScene:
        """Build from ``<scan>_connectivity.json`` and the scan's mesh.

        Raises:
            SceneError: unreadable files, or the mesh does not line up with the graph (fewer than
                :data:`ALIGN_MIN_FRACTION` of the viewpoints on a mesh floor: wrong up axis or scan).
        """
        if not cell > 0:
            raise SceneError("cell must be > 0 m")
        base = Scene.from_connectivity(connectivity, corridor_width=corridor_width)
        self = cls.__new__(cls)
        self.__dict__.update(base.__dict__)
        self.mesh_path = Path(mesh)
        self.parts = read_mesh(mesh, up)
        self.cell = float(cell)
        self._build_mesh()
        self._runtime_init()
        al = self.alignment()
        if al.n and al.on_floor < ALIGN_MIN_FRACTION * al.n:
            raise SceneError(
                f"scene mesh {mesh}: only {al.on_floor} of {al.n} viewpoints of {self.name} stand on a mesh floor "
                f"(within {ALIGN_TOL_M} m); wrong scan, or the mesh is not y-up (set scenes_up: z for a z-up mesh)"
            )
        return self

    # ------------------------------------------------------------------ building
    def _build_mesh(self) -> None:
        cell = self.cell
        pts, nz = _sample_surface(self.parts, cell)
        lo = pts[:, :2].min(axis=0) - 2 * cell
        hi = pts[:, :2].max(axis=0) + 2 * cell
        self.origin = (float(lo[0]), float(lo[1]))
        w = int(math.ceil((hi[0] - lo[0]) / cell))
        h = int(math.ceil((hi[1] - lo[1]) / cell))
        ix = np.clip(((pts[:, 0] - lo[0]) / cell).astype(np.int64), 0, w - 1)
        iy = np.clip(((pts[:, 1] - lo[1]) / cell).astype(np.int64), 0, h - 1)
        flat = iy * w + ix
        up = nz > 0.7
        from scipy import ndimage

        nf = len(self.floors)
        free = np.zeros((nf, h, w), bool)
        ground = np.full((nf, h, w), np.nan, np.float32)
        self.free_grid, self.ground_grid = free, ground
        for f in self.floors:
            sel = up & (np.abs(pts[:, 2] - f.z) <= FLOOR_BAND_M)
            g = np.full(h * w, -np.inf, np.float32)
            np.maximum.at(g, flat[sel], pts[sel, 2])
            g = g.reshape(h, w)
            has = np.isfinite(g)
            filled = ndimage.binary_closing(has, np.ones((3, 3), bool), iterations=2) | has
            gz = np.where(has, g, np.float32(f.z))
            rel = pts[:, 2] - gz.ravel()[flat]
            obst_s = (rel > STEP_M) & (rel <= BODY_TOP_M)
            obst = np.zeros(h * w, bool)
            obst[flat[obst_s]] = True
            fr = filled & ~obst.reshape(h, w)
            lab, _n = ndimage.label(fr)
            keep = set()
            for vid in f.viewpoints:
                v = self.viewpoints[vid]
                i, j = self._cell(v.x, v.y)
                r = max(1, int(round(0.5 / cell)))
                win = lab[max(0, i - r) : i + r + 1, max(0, j - r) : j + r + 1]
                keep.update(int(x) for x in np.unique(win) if x)
            fr &= np.isin(lab, list(keep)) if keep else False
            free[f.index] = fr
            ground[f.index] = np.where(filled, gz, np.nan)
        self.free_grid = free
        self.ground_grid = ground
        owns: list[BaseGeometry] = []
        for f in self.floors:
            poly = grid_polygon(free[f.index], self.origin, cell)
            # a viewpoint is where a tripod stood: keep a small disc there walkable even if the grid cut it
            discs = [Point(self.viewpoints[v].x, self.viewpoints[v].y).buffer(2 * cell) for v in f.viewpoints]
            owns.append(shapely.union_all([poly, *discs]))
        for r in self.ramps:
            da = Point(r.a[0], r.a[1]).buffer(self.viewpoint_radius).intersection(owns[r.floor_a])
            db = Point(r.b[0], r.b[1]).buffer(self.viewpoint_radius).intersection(owns[r.floor_b])
            r.reach = shapely.union_all([r.polygon, da, db])
            r.floors = sorted({r.floor_a, r.floor_b})
        floors = []
        for f, own in zip(self.floors, owns, strict=False):
            ramp_polys = [r.reach for r in self.ramps if f.index in r.floors]
            fr = shapely.union_all([own, *ramp_polys]) if ramp_polys else own
            floors.append(Floor(f.index, f.z, fr, own, list(f.viewpoints), f.vp_xyz))
        self.floors = floors

    def _cell(self, x: float, y: float) -> tuple[int, int]:
        """(row, column) of map (x, y) in the occupancy grid (clipped to the grid)."""
        h, w = self.free_grid.shape[1:]
        j = int(np.clip((x - self.origin[0]) / self.cell, 0, w - 1))
        i = int(np.clip((y - self.origin[1]) / self.cell, 0, h - 1))
        return i, j

    def __getstate__(self) -> dict:
        raise TypeError("MeshScene is not pickled (the scene cache holds procedural scenes only)")

    # ------------------------------------------------------------------ checks and views
    def mesh_floor_z(self, x: float, y: float, z: float) -> float:
        """Height (m) of the mesh floor surface under map (x, y) nearest to ``z`` (NaN: none within :data:`FLOOR_BAND_M`)."""
        i, j = self._cell(x, y)
        g = self.ground_grid[:, i, j]
        ok = np.isfinite(g) & (np.abs(g - z) <= FLOOR_BAND_M)
        return float(g[ok][np.argmin(np.abs(g[ok] - z))]) if ok.any() else math.nan

    def alignment(self, camera_height_m: float | None = None) -> Alignment:
        """Check the mesh transform on the navigation graph's viewpoints (module docstring).

        A viewpoint passes when the mesh has a floor within :data:`ALIGN_TOL_M` of its ground z and its
        occupancy cell (body band) is free. ``camera_height_m`` (m, e.g. the Go2 head camera's
        ``GO2_CAMERA_HEIGHT_M``) is added to each ground z before measuring the height above the mesh
        floor, so the result says where that camera sits over the real floor.
        """
        on, clear, hs, bad = 0, 0, [], []
        for v in self.viewpoints.values():
            fz = self.mesh_floor_z(v.x, v.y, v.z)
            ok_floor = math.isfinite(fz) and abs(fz - v.z) <= ALIGN_TOL_M
            i, j = self._cell(v.x, v.y)
            ok_clear = bool(self.free_grid[v.floor, i, j])
            on += ok_floor
            clear += ok_clear
            if math.isfinite(fz):
                hs.append(v.z + (camera_height_m if camera_height_m is not None else 0.0) - fz)
            if not (ok_floor and ok_clear):
                bad.append(v.id)
        return Alignment(len(self.viewpoints), on, clear, float(np.median(hs)) if hs else math.nan, bad)

    def render_parts(self) -> list[SurfacePart]:
        """The textured mesh pieces for the renderer (map frame)."""
        return self.parts

    def triangle_count(self) -> int:
        """Number of mesh triangles."""
        return int(sum(len(p.faces) for p in self.parts))

    def goal_distance_factory(self, goal) -> MeshGoalDistance:
        """Walkable distance to ``goal`` on this mesh (:class:`MeshGoalDistance`); World calls it instead of the graph-based one."""
        return MeshGoalDistance(self, goal)

    def __repr__(self) -> str:
        return f"MeshScene({self.name!r}, mesh={self.mesh_path.name}, triangles={self.triangle_count()}, floors={len(self.floors)})"


class _GeoGrid:
    """Per-scene geodesic graph: floors' occupancy pooled to :data:`GEO_CELL_M`, 8-connected, stairs edges between floors."""

    def __init__(self, scene: MeshScene) -> None:
        from scipy import ndimage, sparse

        k = max(1, int(round(GEO_CELL_M / scene.cell)))
        fg = scene.free_grid
        nf, h, w = fg.shape
        H, W = -(-h // k), -(-w // k)
        pad = np.zeros((nf, H * k, W * k), bool)
        pad[:, :h, :w] = fg
        pooled = pad.reshape(nf, H, k, W, k).mean(axis=(2, 4)) >= 0.5
        self.k, self.cell, self.shape = k, scene.cell * k, (nf, H, W)
        self.origin = scene.origin
        self.free = pooled
        n = nf * H * W
        ids = np.arange(n).reshape(nf, H, W)
        rows, cols, wts = [], [], []
        for di, dj in ((0, 1), (1, 0), (1, 1), (1, -1)):
            a = pooled[:, max(0, -di) : H - max(0, di), max(0, -dj) : W - max(0, dj)]
            b = pooled[:, max(0, di) : H - max(0, -di), max(0, dj) : W - max(0, -dj)]
            m = a & b
            ia = ids[:, max(0, -di) : H - max(0, di), max(0, -dj) : W - max(0, dj)][m]
            ib = ids[:, max(0, di) : H - max(0, -di), max(0, dj) : W - max(0, -dj)][m]
            rows.append(ia)
            cols.append(ib)
            wts.append(np.full(len(ia), self.cell * math.hypot(di, dj)))
        # nearest free cell of each floor (for points just off the pooled grid)
        self._near = [ndimage.distance_transform_edt(~pooled[f], return_indices=True) for f in range(nf)]
        for r in scene.ramps:
            a = self.node(r.floor_a, r.a[0], r.a[1])
            b = self.node(r.floor_b, r.b[0], r.b[1])
            if a is not None and b is not None:
                rows.append(np.array([a]))
                cols.append(np.array([b]))
                wts.append(np.array([math.dist(r.a, r.b)]))
        r_, c_, w_ = np.concatenate(rows), np.concatenate(cols), np.concatenate(wts)
        self.graph = sparse.coo_matrix((w_, (r_, c_)), shape=(n, n)).tocsr()

    def node(self, floor: int, x: float, y: float, max_snap_m: float = 0.5) -> int | None:
        """Graph node of the free cell at (or nearest to, within ``max_snap_m``) map (x, y) on ``floor``."""
        nf, H, W = self.shape
        i = int(np.clip((y - self.origin[1]) / self.cell, 0, H - 1))
        j = int(np.clip((x - self.origin[0]) / self.cell, 0, W - 1))
        dist, (ii, jj) = self._near[floor]
        if dist[i, j] * self.cell > max_snap_m:
            return None
        i, j = int(ii[i, j]), int(jj[i, j])
        return (floor * H + i) * W + j

    def centre(self, node: int) -> tuple[float, float]:
        """Map (x, y) of a node's cell centre (m)."""
        _nf, H, W = self.shape
        j = node % W
        i = (node // W) % H
        return self.origin[0] + (j + 0.5) * self.cell, self.origin[1] + (i + 0.5) * self.cell


_GEO: dict[int, _GeoGrid] = {}
_GEO_LOCK = threading.Lock()


class MeshGoalDistance:
    """Walkable distance to one goal over a :class:`MeshScene` (grid geodesic; same API as
    :class:`havln_robot.sim.geodesic.GoalDistance`: :meth:`query` -> :class:`Walkable`).

    NE(p) = |p - c(p)| + D(c(p)), where c(p) is p's geodesic-grid cell on the floor under p (or the
    nearest free cell within 0.5 m) and D the Dijkstra distance (scipy.sparse.csgraph, once per goal)
    from the goal's cell; on a stairs ramp, the better of its two ends. Nothing reachable: the
    straight-line distance with ``unreachable`` True (finite, never inf/NaN).

    Raises:
        ValueError: a goal coordinate is not finite.
    """

    def __init__(self, scene: MeshScene, goal) -> None:
        from scipy.sparse import csgraph

        gx, gy, gz = (float(c) for c in goal)
        if not all(math.isfinite(c) for c in (gx, gy, gz)):
            raise ValueError(f"goal {tuple(goal)!r} is not a finite point")
        self.scene, self.goal = scene, (gx, gy, gz)
        with _GEO_LOCK:
            gg = _GEO.get(id(scene))
            if gg is None or getattr(gg, "_scene_ref", None) is not scene:
                gg = _GeoGrid(scene)
                gg._scene_ref = scene  # type: ignore[attr-defined]
                _GEO[id(scene)] = gg
                if len(_GEO) > 16:
                    _GEO.pop(next(iter(_GEO)))
        self.gg = gg
        self._goal_support = scene.support(gx, gy, gz)
        src = self._nodes(gx, gy, gz)
        if src:
            d = csgraph.dijkstra(gg.graph, directed=False, indices=[n for n, _ in src], min_only=True)
            # the legs from the goal to its cell(s) are added at query time via the nearest cell
            self.dist = d
            self._goal_legs = dict(src)
        else:
            self.dist = np.full(gg.graph.shape[0], np.inf)
            self._goal_legs = {}
        self._last: tuple[tuple[float, float, float], Walkable] | None = None

    def _nodes(self, x: float, y: float, z: float) -> list[tuple[int, float]]:
        """(node, leg length m) pairs joining ground point p to the grid."""
        s = self.scene.support(x, y, z)
        gg = self.gg
        out: list[tuple[int, float]] = []
        if s is None:
            return out
        if s.kind == "floor":
            n = gg.node(s.index, x, y)
            if n is not None:
                cx, cy = gg.centre(n)
                out.append((n, math.hypot(x - cx, y - cy)))
            return out
        r = self.scene.ramps[s.index]
        for fl, end in ((r.floor_a, r.a), (r.floor_b, r.b)):
            n = gg.node(fl, end[0], end[1])
            if n is not None:
                out.append((n, math.dist((x, y, z), end)))
        return out

    def _straight(self, p: tuple[float, float, float]) -> bool:
        """True when the straight segment p -> goal stays in the free space of the one floor both stand on."""
        sp = self.scene.support(*p)
        gs = self._goal_support
        if gs is None or sp is None or sp.kind != "floor" or (sp.kind, sp.index) != (gs.kind, gs.index):
            return False
        seg = shapely.LineString([p[:2], self.goal[:2]])
        return bool(self.scene.floors[sp.index].own.contains(seg))

    def query(self, x: float, y: float, z: float) -> Walkable:
        """Walkable distance from the ground point (x, y, z) (map frame, m) to the goal."""
        p = (float(x), float(y), float(z))
        if self._last is not None and self._last[0] == p:
            return self._last[1]
        euclid = math.dist(p, self.goal)
        best = math.inf
        for n, leg in self._nodes(*p):
            best = min(best, leg + float(self.dist[n]))
        if math.isfinite(best):
            g_leg = min(self._goal_legs.values()) if self._goal_legs else 0.0
            ne = max(euclid, best + g_leg)  # the grid may cut corners by < 1 cell
            if ne > euclid and self._straight(p):
                ne = euclid
            out = Walkable(ne, euclid, False, "")
        else:
            out = Walkable(euclid, euclid, True, "")
        self._last = (p, out)
        return out


_MEMO: dict[tuple, MeshScene] = {}
_MEMO_LOCK = threading.Lock()


def load_scene(
    scan: str,
    connectivity_dir: str | os.PathLike[str] | None = None,
    scenes_dir: str | os.PathLike[str] | None = None,
    up: str = "y",
    corridor_width: float = DEFAULT_CORRIDOR_WIDTH_M,
) -> Scene:
    """The scene of ``scan``: a :class:`MeshScene` when ``scenes_dir`` is given (``--scenes DIR``),
    else the procedural :meth:`Scene.load` (the default; ``"builtin"`` is always procedural).

    Mesh scenes are built once per process and mesh file (memo; no disk cache, nothing under $HOME).

    Raises:
        SceneError: missing/malformed connectivity or mesh, or a mesh that does not line up.
    """
    if scan == "builtin":
        return Scene.builtin()
    if not scenes_dir:
        return Scene.load(scan, connectivity_dir, corridor_width=corridor_width)
    mesh = scene_mesh_path(scenes_dir, scan)
    if connectivity_dir is None:
        from havln_robot.paths import data_dir

        connectivity_dir = data_dir() / "connectivity"
    conn = Path(connectivity_dir) / f"{scan}_connectivity.json"
    if not conn.is_file():
        raise SceneError(f"no connectivity file for scan {scan!r} at {conn}; pass --connectivity DIR (the HA-VLN 'connectivity' folder)")
    st, sc = mesh.stat(), conn.stat()
    key = (str(mesh), st.st_mtime_ns, st.st_size, str(conn), sc.st_mtime_ns, up, corridor_width)
    with _MEMO_LOCK:
        hit = _MEMO.get(key)
    if hit is not None:
        return hit
    scene = MeshScene.from_files(conn, mesh, up=up, corridor_width=corridor_width)
    with _MEMO_LOCK:
        _MEMO[key] = scene
        if len(_MEMO) > 8:
            _MEMO.pop(next(iter(_MEMO)))
    return scene
