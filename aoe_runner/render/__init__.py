"""Output: every format behind one interface (formats.py), the terminal's tables, CSV, JSON and HTML pages (html/)."""
