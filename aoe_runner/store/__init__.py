"""A team's shared run history on PostgreSQL: the store choice, the schema, push, and `bank best`."""
