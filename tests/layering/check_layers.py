#!/usr/bin/env python3
"""Include-level layering check (the link-level one is cmake/CheckLayers.cmake).

Each folder may include only the layers below it:
  sim <- config <- topologies <- models <- services <- {validate, cli, python}
and no product folder (sim, config, topologies, models, services) includes validate/ or cli/.
Exits 1 listing every offending #include."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# folder -> the top-level folders its files may include
ALLOWED = {
    "sim": {"sim"},
    "config": {"config", "sim"},
    "topologies": {"topologies", "config", "sim", "models"},  # topologies read the hardware catalogue
    "models": {"models", "topologies", "config", "sim"},
    "services": {"services", "models", "topologies", "config", "sim"},
    "validate": {"validate", "services", "models", "topologies", "config", "sim"},
    "cli": {"cli", "validate", "services", "models", "topologies", "config", "sim"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/')


def offences():
    for top, allowed in ALLOWED.items():
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith((".cpp", ".hpp", ".h", ".cu")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) in ALLOWED and m.group(1) not in allowed:
                            yield f"{os.path.relpath(path, ROOT)}:{lineno}: {top}/ includes {m.group(1)}/"


def main():
    bad = list(offences())
    for b in bad:
        print(b)
    print(f"layering: {len(bad)} offending include(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
