#!/usr/bin/env python3
"""docs/scenario.md's key reference is generated from the scenario schema (config/schema.hpp).

  scenario_doc.py STACKSIM DOC --check   exit 1 (with a diff) when DOC's generated part is not
                                         what `STACKSIM schema --markdown` prints now
  scenario_doc.py STACKSIM DOC --write   rewrite that part in place (the prose around it is kept)

Only the text between the BEGIN and END markers is generated."""
import difflib
import subprocess
import sys

BEGIN = "<!-- BEGIN GENERATED: stacksim schema --markdown (tests/docs/scenario_doc.py --write) -->"
END = "<!-- END GENERATED -->"


def split(text, path):
    b, e = text.find(BEGIN), text.find(END)
    if b < 0 or e < b:
        sys.exit(f"{path}: the markers are missing. Fix: add the lines\n{BEGIN}\n{END}\nwhere the key reference goes")
    return text[: b + len(BEGIN)] + "\n", text[b + len(BEGIN) + 1 : e], text[e:]


def main(argv):
    if len(argv) != 4 or argv[3] not in ("--check", "--write"):
        sys.exit(__doc__)
    stacksim, doc, mode = argv[1:]
    generated = subprocess.run([stacksim, "schema", "--markdown"], check=True, capture_output=True, text=True).stdout
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    head, current, tail = split(text, doc)
    if mode == "--write":
        with open(doc, "w", encoding="utf-8") as f:
            f.write(head + generated + tail)
        return 0
    if current == generated:
        return 0
    sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), generated.splitlines(True), doc, "schema"))
    print(f"\n{doc}: the key reference is not current. Fix: python3 tests/docs/scenario_doc.py {stacksim} {doc} --write")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
