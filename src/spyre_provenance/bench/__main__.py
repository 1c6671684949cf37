from spyre_provenance.bench.run import main

raise SystemExit(main())
