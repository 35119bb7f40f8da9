"""Store backends behind one protocol: the embedded Qdrant engine and the Qdrant server."""
