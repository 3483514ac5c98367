"""Navigation policies: the policy contract (:mod:`.api`), the HA-VLN-CMA layout (:mod:`.cma`),
a small panoramic CPU/Jetson model (:mod:`.small`), the HA-R2R tokenizer, checkpoint IO,
imitation-learning training (:mod:`.train`) and the policy benchmark (:mod:`.bench`).

Importing this package is cheap (no torch); torch is imported by the modules that need it.
"""

from havln_robot.policy.api import Observation, Policy, PolicyError, load_policy

__all__ = ["Observation", "Policy", "PolicyError", "load_policy"]
