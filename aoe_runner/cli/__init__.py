"""The command line: a module per command group, app.py the one place commands are registered, main.py the dispatch
and the exit-code contract. Each command parses, calls one core function, renders through render.formats, and
returns an exit code."""
