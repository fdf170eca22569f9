"""GPU telemetry: nvidia-smi (CSV, dmon, XML), DCGM exporter scrapes, Prometheus answers and pulls, dcgmi dmon."""
