"""ament_python package setup for havln_robot (also `pip install -e .` for the pip-wheel ROS 2)."""

import runpy
from glob import glob
from pathlib import Path

from setuptools import find_namespace_packages, setup

PACKAGE = "havln_robot"
# The node table, read as a file: setup.py never imports havln_robot (colcon must not pull in torch).
NODES = runpy.run_path(str(Path(__file__).resolve().parent / PACKAGE / "node_table.py"))["NODES"]

setup(
    name=PACKAGE,
    version="0.1.0",
    # namespace discovery: the data folders (console/static, sim/assets, sim/scenes) are packages too
    packages=find_namespace_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    include_package_data=True,
    package_data={PACKAGE: ["sim/assets/*", "sim/scenes/*", "console/static/*"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.xml")),
        (f"share/{PACKAGE}/models", glob("models/*")),
        (f"share/{PACKAGE}/gazebo", glob("gazebo/*")),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="havln_robot maintainers",
    maintainer_email="havln-robot@example.org",
    description="Run a trained HA-VLN 2.0 policy on a Unitree Go2 with ROS 2; replay in sim; log trials.",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [f"{n} = {PACKAGE}.nodes.{n}:main" for n in NODES] + ["havln-robot = havln_robot.cli:main"],
    },
)
