#!/usr/bin/env python3
"""Every C++/CUDA source of the tree is as clang-format (the root .clang-format) writes it.

  check_format.py CLANG_FORMAT ROOT           exit 1 listing the files that differ (and how to fix)
  check_format.py CLANG_FORMAT ROOT --write    reformat them in place
"""
import pathlib
import subprocess
import sys

FOLDERS = ["sim", "config", "topologies", "models", "services", "cli", "python", "validate", "tests",
           "benchmarks", "fuzz", "probe"]
SUFFIXES = {".cpp", ".hpp", ".h", ".cu", ".cuh"}


def sources(root):
    for folder in FOLDERS:
        for p in sorted((root / folder).rglob("*")):
            if p.suffix in SUFFIXES and p.is_file() and "build" not in p.relative_to(root).parts:
                yield p


def main(argv):
    if len(argv) not in (3, 4) or (len(argv) == 4 and argv[3] != "--write"):
        sys.exit(__doc__)
    clang_format, root = argv[1], pathlib.Path(argv[2])
    files = list(sources(root))
    if len(argv) == 4:
        subprocess.run([clang_format, "-i", "--style=file", *map(str, files)], check=True)
        return 0
    bad = []
    for f in files:
        formatted = subprocess.run([clang_format, "--style=file", str(f)], check=True, capture_output=True).stdout
        if formatted != f.read_bytes():
            bad.append(f.relative_to(root))
    if not bad:
        return 0
    print("\n".join(str(b) for b in bad))
    print(f"\n{len(bad)} of {len(files)} files are not formatted. Fix: python3 tests/format/check_format.py "
          f"{clang_format} . --write")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
