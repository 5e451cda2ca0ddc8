"""`pip install --no-build-isolation .` (offline): builds stacksim's C++ core with CMake and
installs the `stacksim` package with its `_core` (product) and `_validate` (harness) extensions. Needs README's set-up packages."""
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.path.join(ROOT, "build")
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "--preset", "release"], cwd=ROOT)
        module = ext.name.split(".")[-1]
        subprocess.check_call(["cmake", "--build", build, "--target", module, "-j2"], cwd=ROOT)
        built = [f for f in os.listdir(os.path.join(build, "python", "stacksim")) if f.startswith(module + ".")]
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(build, "python", "stacksim", built[0]), target)


setup(
    name="stacksim",
    version="0.1.0",
    description="Discrete-event simulator of AI-cluster training performance",
    packages=["stacksim"],
    package_dir={"": "python"},
    package_data={"stacksim": ["__init__.pyi"]},
    ext_modules=[Extension("stacksim._core", sources=[]), Extension("stacksim._validate", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
)
