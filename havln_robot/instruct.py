"""``havln-robot instruct "walk to the sofa"``: send one instruction to agent_node.

The same as ``ros2 topic pub --once /havln/instruction std_msgs/msg/String "{data: '...'}"``, for
machines without the ``ros2`` command (ROS 2 from pip wheels). Waits until a subscriber of the
instruction topic is discovered (agent_node, the trial logger), publishes once (reliable), and
gives DDS a moment to deliver before it exits. DDS follows ``HAVLN_DDS`` like every node
(loopback unless ``HAVLN_DDS=robot``).
"""

from __future__ import annotations

import argparse
import sys
import time

from havln_robot import topics
from havln_robot.rosnames import RULES_URL, namespace_arg, node_namespace, topic_error
from havln_robot.text import is_blank, nonempty, normalize_instruction, number_in


def main(argv: list[str] | None = None) -> int:
    """``havln-robot instruct TEXT [--topic T] [--namespace NS] [--wait S]``; exit 0 sent, 1 nobody listening, 2 bad input."""
    ap = argparse.ArgumentParser(prog="havln-robot instruct", description="Send one instruction (std_msgs/String) to agent_node.")
    ap.add_argument("text", type=nonempty('the instruction, e.g. "walk to the sofa"'), help='the instruction, e.g. "walk to the sofa"')
    ap.add_argument("--topic", default=topics.INSTRUCTION, help=f"instruction topic (default {topics.INSTRUCTION})")
    ap.add_argument("--namespace", type=namespace_arg, default="", help="namespace of the robot's nodes (go2.launch.py namespace:=NS)")
    ap.add_argument("--wait", type=number_in(0, 3600, unit="s"), default=10.0, help="seconds to wait for a subscriber (default 10)")
    args = ap.parse_args(argv)
    args.text = normalize_instruction(args.text)  # as agent_node reads it
    if is_blank(args.text):  # also zero-width / format characters only (text.is_blank)
        ap.error('give the instruction text, e.g. havln-robot instruct "walk to the sofa"')
    if args.wait <= 0:
        ap.error(f"--wait {args.wait}: give a positive number of seconds")
    why = topic_error(args.topic, "havln_instruct", node_namespace(args.namespace))  # as rclpy checks it, before any node starts
    if why is not None:
        ap.error(f"--topic {args.topic!r}: not a ROS topic name: {why}; give e.g. {topics.INSTRUCTION} ({RULES_URL})")

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String

    from havln_robot.dds import configure_dds

    configure_dds()
    ctx = rclpy.Context()
    rclpy.init(context=ctx, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    try:
        node = rclpy.create_node("havln_instruct", namespace=args.namespace or None, context=ctx, start_parameter_services=False)
        pub = node.create_publisher(String, args.topic, 10)
        name = pub.topic_name
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(node)
        t_end = time.monotonic() + args.wait
        while pub.get_subscription_count() == 0 and time.monotonic() < t_end:
            ex.spin_once(timeout_sec=0.05)
        if pub.get_subscription_count() == 0:
            print(
                f"havln-robot instruct: nobody subscribes to {name} after {args.wait:g} s; start the stack first "
                "(havln-robot launch config/sim.yaml) on the same ROS_DOMAIN_ID and HAVLN_DDS",
                file=sys.stderr,
            )
            return 1
        pub.publish(String(data=args.text))
        t_end = time.monotonic() + 0.5
        while time.monotonic() < t_end:
            ex.spin_once(timeout_sec=0.05)
        print(f"sent to {name} ({pub.get_subscription_count()} subscriber(s)): {args.text}")
        return 0
    finally:
        rclpy.try_shutdown(context=ctx)


if __name__ == "__main__":
    sys.exit(main())
