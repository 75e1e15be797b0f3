from app_server.cli import main

raise SystemExit(main())
