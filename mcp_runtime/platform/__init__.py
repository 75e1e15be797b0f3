"""What differs between the platforms the daemon runs on: the login shell's ``PATH`` and the orphan watcher."""
