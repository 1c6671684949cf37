from spyre_provenance.cli import main

raise SystemExit(main())
