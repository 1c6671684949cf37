from spyre_provenance.cli import main
from spyre_provenance.compile import process_group

code = main()
process_group.end(code)  # a rank of ``compile --ranks`` ends here: it does not return
raise SystemExit(code)
