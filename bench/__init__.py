"""``make bench``: what provenance costs, as ratios against the anchors, in one run.

Twelve measurements, printed as one markdown table (``python -m bench``):

1. Compile overhead (``compile_overhead``): median ``torch.compile`` wall time with
   (A) the hook on, (B) upstream provenance tracking alone, (C) tracking off, interleaved
   round by round, every run with fresh Inductor caches.
2. Validation throughput (``artifacts``): the fast path and the JSON Schema path on a
   synthetic ~100 MB mapping, against plain ``json.loads`` of the same bytes.
3. Build throughput and memory: KernelRecords -> mapping -> bytes for 100k kernels.
4. Scaling: the same at 1k, 10k, 100k and 1M node references.
5. Audit overhead (``audit_overhead``): ``compile --audit`` against ``compile``.
6. Whole-process overhead (``whole_process``): a fresh ``python`` per run, from interpreter
   start to exit, the hook against upstream tracking alone, in interleaved pairs.

7. Run time (``runtime``): ``annotate`` on a 1M-event profiler trace against plain
   ``json.load`` + ``json.dump`` (time and peak memory, fresh processes), and ``lookup``'s
   whole-process time on an ``--out`` of 10k kernels. Not in ``--quick`` runs
   (``python -m bench.runtime --quick`` is its smoke run).
8.-12. The viewer (``viewer``), ``compare`` (``compare``), tracking switched on from outside
   (``attach_overhead``), warm and cold starts (``warm_start``) and call sites recorded at
   launch (``call_sites``): each a module with its own ``--quick`` smoke run, in full runs only.

``--quick`` (or ``SPYRE_BENCH_QUICK=1``) runs a tiny version in seconds; the smoke test uses
it. Timings are never asserted anywhere: they belong to the machine they ran on.
"""
