"""Bank releases: a tuned bank published as a numbered version (NAME@N), pulled onto training hosts, rolled back."""
