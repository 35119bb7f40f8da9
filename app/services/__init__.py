"""Service functions the route handlers call: one job each."""
