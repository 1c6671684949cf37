"""Reading what torch wrote: TORCH_TRACE logs, the graphs in them, wrapper code, tlparse.

``tracelog``      streaming, MD5-checked log reading; the one graph-split rule (``GraphSplitter``)
``graphs``        each compiled graph's records, as logged (``read_log_graphs``)
``post_grad``     a logged post-grad graph as the coverage model (``PostGradGraph``)
``wrapper_code``  kernel call sites and handle comments in generated wrapper code
``tlparse_run``   running tlparse on a log, one log and one page per graph

Pure: no torch.
"""
