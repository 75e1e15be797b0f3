"""What tests, the benchmarks, packaging checks and scripts share: the daemon client, fixtures, the JSON pipe."""
