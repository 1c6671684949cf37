"""What every layer uses: exit codes and errors (``errors``), atomic files (``files``), the GC paused and torch looked for (``process``), patching torch and undoing it (``patches``)."""
