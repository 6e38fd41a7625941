"""Where the run history lives: the local SQLite store (the default), or a team's shared PostgreSQL store."""
