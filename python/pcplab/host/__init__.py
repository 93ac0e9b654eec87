"""The host engine's front end: kernel state, sysctl journal, tracing, sweeps."""
