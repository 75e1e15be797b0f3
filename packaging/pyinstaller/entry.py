"""The bundle's entry point: the installed ``app_server``'s own start-up (``python -m app_server`` does the same)."""

from app_server.process.startup import launch

raise SystemExit(launch())
