"""Self-contained HTML pages (`--format html`): one module per page, the shell and escaping apart.

Nothing here imports plotly: the page inlines the plotly.min.js that the plotly package ships, read from the
installed package when a page is written (assets.py), so `--help` and the text formats never load it.
"""
