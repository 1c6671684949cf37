"""``python -m bench.follow_out [--src SRC] [--list]``: how far the ``--out`` folder travels.

Issue 57 asked for the stops when following ``--out`` from ``compile`` and from ``run`` to the
last file written. This runs ``compile mlp --out X`` and ``run --out X -- python prog.py`` (a
three-layer MLP under ``torch.compile``) with a probe in every process
(``bench/follow_site/sitecustomize.py``) and counts the functions of the package the folder
reaches, by three measures:

- ``holds``: an argument (``self`` included) is the folder, or holds it one level down (an
  item, a field, an attribute), whether the function reads it or not;
- ``reads``: an argument is the folder (or a list holding it), or has an attribute holding it
  that the function's code names: the places a reader following the value must look;
- ``reads+Layout``: as ``reads``, a ``Layout`` of the folder counted as the folder itself.

``--src`` measures another tree (a ``git worktree`` of an older commit). Each figure is
"stops in modules"; ``--list`` prints the functions too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAM = (
    "import torch\n"
    "m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))\n"
    "print(torch.compile(m)(torch.randn(2, 8)).shape)\n"
)
MEASURES = {"holds": "holds", "reads": "reads", "reads_layout": "reads+Layout"}


def follow(src: Path, command: str, work: Path) -> dict[str, set[tuple[str, str]]]:
    """The functions the out folder reached in every process of ``command``, by measure."""
    out, dump = work / f"out_{command}", work / f"dump_{command}"
    python = sys.executable
    argv = {
        "compile": [python, "-m", "spyre_provenance", "compile", "mlp", "--out", str(out)],
        "run": [python, "-m", "spyre_provenance", "run", "--out", str(out), "--", python, str(work / "prog.py")],
    }[command]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE / "follow_site"), str(src)]),
        "FOLLOW_OUT": str(out),
        "FOLLOW_DUMP": str(dump),
    }
    done = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{command} exited {done.returncode}:\n{done.stderr[-2000:]}")
    seen: dict[str, set[tuple[str, str]]] = {m: set() for m in MEASURES}
    for part in work.glob(f"dump_{command}.*.json"):
        for measure, keys in json.loads(part.read_text(encoding="utf-8")).items():
            seen[measure] |= {(module, name) for module, name in keys}
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.follow_out", description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=HERE.parent / "src", help="the tree's src folder")
    parser.add_argument("--list", action="store_true", help="print each function found")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="follow-out-") as tmp:
        work = Path(tmp)
        (work / "prog.py").write_text(PROGRAM, encoding="utf-8")
        print(f"{'measure':14}  {'compile':22}  run")
        found = {command: follow(args.src.resolve(), command, work) for command in ("compile", "run")}
        for measure, shown in MEASURES.items():
            cells = [_figure(found[c][measure]) for c in ("compile", "run")]
            print(f"{shown:14}  {cells[0]:22}  {cells[1]}")
        if args.list:
            for command, by_measure in found.items():
                for measure, keys in by_measure.items():
                    print(f"\n{command}, {MEASURES[measure]}:")
                    print("\n".join(f"  {module} {name}" for module, name in sorted(keys)))
    return 0


def _figure(keys: set[tuple[str, str]]) -> str:
    return f"{len(keys)} in {len({module for module, _ in keys})} modules"


if __name__ == "__main__":
    sys.exit(main())
