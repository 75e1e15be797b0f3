from app_server.early import launch

raise SystemExit(launch())
