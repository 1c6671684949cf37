"""What every layer uses: exit codes and errors (``errors``), atomic files (``files``), patching torch and undoing it (``patches``)."""
