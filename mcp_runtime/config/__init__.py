"""What a valid server config is (rules), how it is shown and edited (edits), and the deployment policy."""
