"""set_parameters never claims success for a value the node would not apply (HavlnNode's on-set
callback): a parameter read once at start is refused, naming it; a live one is checked as the
params file is (type, range, finite). node.set_parameters runs the same callbacks as the
/<node>/set_parameters service."""

from __future__ import annotations

import math

from rclpy.parameter import Parameter

from havln_robot.nodes.people_node import PeopleNode
from havln_robot.nodes.trial_logger_node import TrialLoggerNode
from havln_robot.perception.params import PEOPLE_PARAMS
from havln_robot.trials.params import TRIAL_LOGGER_PARAMS


def test_a_parameter_read_at_start_is_refused_and_kept(ros_context):
    node = PeopleNode(params=PEOPLE_PARAMS.defaults(), context=ros_context)
    try:
        before = node.get_parameter("rate_hz").value
        (r,) = node.set_parameters([Parameter("rate_hz", Parameter.Type.DOUBLE, before / 2)])
        assert not r.successful and "rate_hz is read once at start" in r.reason and "restart the node" in r.reason
        assert node.get_parameter("rate_hz").value == before
        (r,) = node.set_parameters([Parameter("rate_hz", Parameter.Type.DOUBLE, math.nan)])
        assert not r.successful and node.get_parameter("rate_hz").value == before
        (r,) = node.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, True)])  # rclpy's time source applies it
        assert r.successful
    finally:
        node.destroy_node()


def test_live_trial_metadata_is_checked_and_applied(ros_context, tmp_path):
    node = TrialLoggerNode(params=TRIAL_LOGGER_PARAMS.validate({"db_path": str(tmp_path / "t.db")}), context=ros_context)
    try:
        results = node.set_parameters(
            [Parameter("people_present", Parameter.Type.INTEGER, 3), Parameter("operator", Parameter.Type.STRING, "ann")]
        )
        assert all(r.successful for r in results)
        assert node._trial_meta().meta["people_present"] == 3 and node._trial_meta().meta["operator"] == "ann"
        (r,) = node.set_parameters([Parameter("people_present", Parameter.Type.INTEGER, -1)])
        assert not r.successful and "people_present" in r.reason and "out of range" in r.reason
        (r,) = node.set_parameters([Parameter("goal_radius", Parameter.Type.DOUBLE, math.nan)])
        assert not r.successful and "goal_radius" in r.reason and "finite" in r.reason
        assert node.get_parameter("people_present").value == 3 and math.isfinite(node.get_parameter("goal_radius").value)
        (r,) = node.set_parameters([Parameter("db_path", Parameter.Type.STRING, str(tmp_path / "other.db"))])
        assert not r.successful and "db_path is read once at start" in r.reason
    finally:
        node.destroy_node()
