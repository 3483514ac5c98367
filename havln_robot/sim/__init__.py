"""Embedded simulator (pure Python; no ROS import here).

Batch mode API: :mod:`havln_robot.episodes` reads HA-R2R / R2R episodes;
:class:`havln_robot.sim.scene.Scene` builds the free space of a Matterport3D scan from its
navigation graph; :class:`havln_robot.sim.humans.Crowd` places and animates the episode's people;
:class:`havln_robot.sim.world.World` steps discrete actions (or small continuous motions for
sim_node) with collisions and ground-truth metrics (:mod:`havln_robot.sim.metrics`);
:class:`havln_robot.sim.expert.Expert` follows the reference path around people;
``havln-robot eval`` (:mod:`havln_robot.eval`) is a harness above this package. Rendering and the noisy Go2 base live in
``render.py`` / ``robot.py``. See ``docs/sim.md``.
"""
