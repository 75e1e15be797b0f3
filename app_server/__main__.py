from app_server.process.startup import launch

raise SystemExit(launch())
