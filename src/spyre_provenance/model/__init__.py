"""The data model every layer shares: names, records, the wire form, detection, folders.

``names``    artifact names, torch's record names, fault stages, coverage rules, file names
``records``  what the hook collects and writes (msgspec Structs)
``post_grad_graph``  the post-grad graph model the coverage judge and the inference read
``wire``     the artifacts as on disk, derived from the records where they are written as is
``detect``   which artifact and version a document is; ``Problem`` and JSON paths
``folders``  graph-folder names (written by capture and compile, read by golden)
``cached_graph``  what a tracked compile stores with its Inductor cache entry

Pure: no torch, nothing above ``base/``.
"""
