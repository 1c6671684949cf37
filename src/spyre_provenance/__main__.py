from spyre_provenance.cli import exit_with, main

exit_with(main())
