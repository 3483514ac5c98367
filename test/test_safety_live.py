"""The live subset of the safety course: course scenes through the real motion_node on a ROS graph
(:mod:`havln_robot.bench.safety_live`) end as their batch runs do. The reported cases: a box
approached with MOVE_FORWARDs (entered by 3 cm before) and a stage edge (walked off before); the
glass door, which only the LiDAR sees, runs the LiDAR path live. The whole subset is
``havln-robot bench safety --live``.

Cost: about 60 s (three live runs in real time, ~15-20 s each).
"""

from __future__ import annotations

import pytest

from havln_robot.sim import hazards as H

pytest.importorskip("rclpy")


@pytest.mark.parametrize(
    ("scene", "lidar"),
    [
        (H.box_scene(1.55, 0.30, 0.4, 0.0), False),
        (H.ledge_scene(1.55, 0.5), False),
        (H.glass_scene(1.2), True),
    ],
    ids=["box-approached", "ledge", "glass-lidar"],
)
def test_a_live_course_run_ends_as_its_batch_run(scene, lidar):
    from havln_robot.bench.safety_live import live_run

    batch = H.run(scene, seed=0, lidar=lidar)
    live = live_run(scene, seed=0, lidar=lidar)
    assert not live.contact and not live.fall, live.outcomes
    assert (live.contact, live.fall, live.refused) == (batch.contact, batch.fall, batch.refused), (live.outcomes, batch.outcomes)
    assert abs(live.travelled_m - batch.travelled_m) < 0.15, (live.travelled_m, batch.travelled_m)
