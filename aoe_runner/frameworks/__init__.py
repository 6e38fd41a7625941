"""Which framework a training script uses, how each one's AOE switch is thrown, and the offline `aoe` CLI."""
