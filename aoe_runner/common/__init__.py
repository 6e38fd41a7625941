"""Small helpers every package may use: the terminal, atomic files, JSON text, locks, processes, words."""
