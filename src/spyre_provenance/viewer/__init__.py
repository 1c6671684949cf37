"""``spyre-provenance view``: one self-contained HTML page of an ``--out`` folder.

``sources`` captures the model's source lines at compile time (the ``spyre_source_lines``
companion document); ``data`` reads an ``--out`` folder's artifacts into the page's one
JSON document; ``timing`` reads a profiled run's trace into per-call-site times; ``page``
puts the document, the CSS and the JavaScript (``assets/``) into one HTML file; ``pages``
is the one writer of a folder's pages (tlparse's, the viewer's, the annotated profile) that
every command prints from.

Pure: reads artifacts, imports no torch.
"""
