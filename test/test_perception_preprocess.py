"""Preprocessing to the HA-VLN-CE model format and the camera→model field-of-view mapping."""

from __future__ import annotations

import math

import numpy as np
import pytest

from havln_robot.perception.preprocess import (
    D435I_COLOR_HFOV_DEG,
    Intrinsics,
    IntrinsicsError,
    PreprocessError,
    depth_to_metres,
    fov_affine,
    model_intrinsics,
    to_model_depth,
    to_model_rgb,
)
from havln_robot.policy.api import Observation

CAM = Intrinsics.from_hfov(848, 480, D435I_COLOR_HFOV_DEG)


def _blob(shape, u, v, r=5.0):
    yy, xx = np.mgrid[0 : shape[0], 0 : shape[1]]
    return ((xx - u) ** 2 + (yy - v) ** 2) <= r * r


def _centroid(w):
    w = w.astype(np.float64)
    return (w * np.arange(w.shape[1])[None, :]).sum() / w.sum(), (w * np.arange(w.shape[0])[:, None]).sum() / w.sum()


def test_shapes_dtypes_ranges():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (480, 848, 3), dtype=np.uint8)
    depth_mm = rng.integers(0, 20000, (480, 848), dtype=np.uint16)
    r = to_model_rgb(rgb, D435I_COLOR_HFOV_DEG)
    d = to_model_depth(depth_mm, D435I_COLOR_HFOV_DEG)
    assert r.shape == (224, 224, 3) and r.dtype == np.uint8
    assert d.shape == (256, 256, 1) and d.dtype == np.float32
    assert 0.0 <= d.min() and d.max() <= 1.0
    # values beyond 10 m clip to exactly 1.0; the random image has plenty of them
    assert d.max() == 1.0
    # the outputs satisfy the policy contract
    Observation(rgb=r[None], depth=d[None], headings=np.zeros(1, np.float32)).check(1)


def test_depth_normalisation_exact():
    # 90° camera of the model's own size: identity geometry, only units/clipping change
    d = np.full((256, 256), 2500, np.uint16)  # 2.5 m
    d[:10] = 15000  # 15 m -> clipped to 10 m
    d[10:20] = 0  # no return
    out = to_model_depth(d, 90.0)[..., 0]
    assert np.allclose(out[30:], 0.25)
    assert np.allclose(out[:10], 1.0)
    assert np.allclose(out[10:20], 0.0)
    # float metres input (32FC1) gives the same
    assert np.allclose(to_model_depth(d.astype(np.float32) / 1000.0, 90.0), to_model_depth(d, 90.0))


def test_identity_at_model_fov_and_size():
    rgb = np.random.default_rng(1).integers(0, 256, (224, 224, 3), dtype=np.uint8)
    assert np.array_equal(to_model_rgb(rgb, 90.0), rgb)


@pytest.mark.parametrize("bearing_deg,elev_deg", [(0, 0), (10, 5), (25, -8), (-30, 12), (33, 0), (-20, -15)])
def test_bearing_lands_where_the_90deg_pinhole_predicts(bearing_deg, elev_deg):
    th, el = math.radians(bearing_deg), math.radians(elev_deg)
    u, v = CAM.project(th, el)
    img = np.zeros((480, 848, 3), np.uint8)
    img[_blob(img.shape, u, v, 6)] = 255
    out = to_model_rgb(img, D435I_COLOR_HFOV_DEG)
    cu, cv = _centroid(out[..., 0])
    eu, ev = model_intrinsics(224).project(th, el)
    assert abs(cu - eu) < 0.35 and abs(cv - ev) < 0.35, (cu, cv, eu, ev)
    # left bearings land left of centre (REP 103: left is +yaw)
    assert (cu < 111.5) == (bearing_deg > 0) or bearing_deg == 0

    depth = np.zeros((480, 848), np.uint16)
    depth[_blob(depth.shape, u, v, 8)] = 3000
    dm = to_model_depth(depth, D435I_COLOR_HFOV_DEG)[..., 0]
    assert np.allclose(dm[dm > 0], 0.3)  # nearest neighbour: no invented depths
    du, dv = _centroid(dm > 0)
    eu, ev = model_intrinsics(256).project(th, el)
    assert abs(du - eu) < 0.75 and abs(dv - ev) < 0.75, (du, dv, eu, ev)


def test_pad_region_matches_camera_fov():
    rgb = np.full((480, 848, 3), 200, np.uint8)
    out = to_model_rgb(rgb, D435I_COLOR_HFOV_DEG)
    cols = np.nonzero(out[112, :, 0] > 100)[0]
    rows = np.nonzero(out[:, 112, 0] > 100)[0]
    # visible width = 224 * tan(69.4/2) / tan(45), height = 224 * tan(vfov/2)
    exp_w = 224 * math.tan(math.radians(D435I_COLOR_HFOV_DEG / 2))
    exp_h = 224 * math.tan(math.radians(CAM.vfov_deg / 2))
    assert abs(len(cols) - exp_w) <= 2 and abs(len(rows) - exp_h) <= 2
    assert out[0, 0].tolist() == [0, 0, 0] and out[112, 112].tolist() == [200, 200, 200]


def test_intrinsics_from_camera_info_off_centre_principal_point():
    # a real D435i colour camera_info has an off-centre principal point; use it, not the ideal one
    k = [615.0, 0.0, 430.2, 0.0, 615.5, 247.9, 0.0, 0.0, 1.0]
    intr = Intrinsics.from_k(k, 848, 480)
    th = math.radians(-17)
    u, v = intr.project(th, 0.0)
    img = np.zeros((480, 848, 3), np.uint8)
    img[_blob(img.shape, u, v, 6)] = 255
    cu, cv = _centroid(to_model_rgb(img, intrinsics=intr)[..., 0])
    eu, ev = model_intrinsics(224).project(th, 0.0)
    assert abs(cu - eu) < 0.35 and abs(cv - ev) < 0.35
    # intrinsics of a full-resolution camera_info also apply to a downscaled image
    small = np.ascontiguousarray(img[::2, ::2])
    cu2, _ = _centroid(to_model_rgb(small, intrinsics=intr)[..., 0])
    assert abs(cu2 - eu) < 0.6


def test_wider_camera_is_cropped_not_shrunk():
    # a 120° camera: the model sees only the central 90°
    cam = Intrinsics.from_hfov(400, 400, 120.0)
    m = fov_affine(cam, model_intrinsics(224))
    edge = m @ np.array([cam.cx + cam.fx * 1.0, cam.cy, 1.0])  # ray at 45°
    assert abs(edge[0] - (111.5 + 112.0)) < 1e-9


def test_stretch_mode_ignores_fov():
    rgb = np.full((480, 848, 3), 50, np.uint8)
    out = to_model_rgb(rgb, D435I_COLOR_HFOV_DEG, mode="stretch")
    assert out.shape == (224, 224, 3) and (out == 50).all()


def test_bad_inputs_raise_one_line_errors():
    with pytest.raises(PreprocessError, match="uint8"):
        to_model_rgb(np.zeros((10, 10, 3), np.float32), 69.4)
    with pytest.raises(PreprocessError, match=r"\(H, W, 3\)"):
        to_model_rgb(np.zeros((10, 10), np.uint8), 69.4)
    with pytest.raises(PreprocessError, match="hfov_deg"):
        to_model_rgb(np.zeros((10, 10, 3), np.uint8))
    with pytest.raises(PreprocessError, match="fov mode"):
        to_model_depth(np.zeros((10, 10), np.uint16), 69.4, mode="crop")
    with pytest.raises(IntrinsicsError, match="K must be"):
        Intrinsics.from_k([0] * 9, 10, 10)
    with pytest.raises(PreprocessError, match="another aspect"):
        to_model_rgb(np.zeros((100, 100, 3), np.uint8), intrinsics=CAM)
    assert depth_to_metres(np.array([[np.nan, -1.0, 2.0]], np.float32)).tolist() == [[0.0, 0.0, 2.0]]
