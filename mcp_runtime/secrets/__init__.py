"""The secret store (SPEC §14): the OS keychain through ``keyring``, or the 0600 files as the fallback; the only
code that reads or writes a secret at rest. ``choice`` decides which at start-up without loading ``keyring``."""
