"""A compile on torch-spyre main with tracking off, through the same route, for comparing
with the tracked one (``test_tracking_changes_nothing.py``): ``spyre-provenance compile``
is always tracked, so the compile worker runs this for ``compile untracked SPEC`` requests.

It loads ``SPEC`` as ``compile`` does (fp16), compiles it with ``route.spyre_inductor`` and
no hook, and prints one line: ``compiled`` or ``refused: <Exception>: <first line>``
(exit 0 either way; torch-spyre writes its bundles into ``$TORCHINDUCTOR_CACHE_DIR``).
"""

from __future__ import annotations


def main(argv: list[str]) -> int:
    import torch

    from spyre_main import route
    from spyre_provenance.compile.examples import load_calls

    (spec,) = argv
    model, calls = load_calls(spec, torch.float16)
    model.train(False)  # as compile runs inference (BatchNorm, dropout in eval mode)
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            torch.compile(model, backend=route.spyre_inductor)(*calls[0])
    except Exception as exc:  # noqa: BLE001 - the refusal is the result
        print(f"refused: {refusal(exc)}")
    else:
        print("compiled")
    finally:
        torch._dynamo.reset()
    return 0


def refusal(exc: BaseException) -> str:
    """An error's innermost cause, one line, as ``compile`` prints a refusal."""
    from spyre_provenance.compile.job import _cause_line

    return _cause_line(exc)
