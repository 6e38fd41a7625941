"""`aoe-runner preflight`: host facts, a plan, and the documented preconditions checked against them."""
