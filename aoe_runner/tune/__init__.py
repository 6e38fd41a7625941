"""aoe-runner tune: launch, supervise and record a training script under AOE."""
