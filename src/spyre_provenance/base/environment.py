"""The environment variables that switch tracking on from outside a program: one place for
their names, which the start-up hook (``spyre_provenance_startup``, which spells ``OUT`` again), the session it attaches
(``capture.attach``) and the ``run`` command (``launch.runner``) all read.

Imports nothing: the start-up hook reads them in every Python process of an environment
where the package is installed.
"""

#: A folder: every Python process that compiles tracks its compiles into its own folder
#: under it (``model.folders.ProcessFolder``). Unset or empty: nothing happens.
OUT = "SPYRE_PROVENANCE_OUT"
#: The backend the attached session tracks (``backends.BACKEND_NAMES``); unset: ``auto``,
#: torch-spyre when the program loaded it, else stock Inductor (``backends.resolve_backend``).
BACKEND = "SPYRE_PROVENANCE_BACKEND"
#: A folder ``run`` makes: a tracked process that ends creates a file named after its own
#: folder there, once its log is flushed, so ``run`` begins its end while the process is
#: still tearing down (``launch.early_end``). Unset: nothing is said.
ENDED = "SPYRE_PROVENANCE_ENDED"
#: A folder in ``ENDED``: a tracked process whose compiles all went to a backend tracking does
#: not record (``aot_eager``, ``eager``, the program's own function; no Inductor code ran)
#: creates a file there named after its folder, the backends' names in it one a line, so
#: ``run`` can say what the run used instead (``launch.early_end``).
OTHER_BACKENDS = "other-backends"
#: The file the wheel (and the editable install) puts into site-packages; its one line
#: starts ``spyre_provenance_startup`` where ``OUT`` is set (pyproject.toml's force-include).
STARTUP_FILE = "spyre_provenance_startup.pth"
