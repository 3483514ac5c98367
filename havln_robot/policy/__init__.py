"""Navigation policies: the policy contract (:mod:`.api`), the HA-VLN-CMA layout (:mod:`.cma`),
a small panoramic CPU/Jetson model (:mod:`.small`), the policies without a checkpoint
(:mod:`.baselines`), the registry that builds any of them from a spec (:mod:`.registry`), the
HA-R2R tokenizer, checkpoint IO,
imitation-learning training (:mod:`.train`) and the policy benchmark (:mod:`.bench`).

Importing this package is cheap (no torch); torch is imported by the modules that need it.
"""

from havln_robot.policy.api import Observation, Policy, PolicyError
from havln_robot.policy.registry import load_policy, make_policy

__all__ = ["Observation", "Policy", "PolicyError", "load_policy", "make_policy"]
