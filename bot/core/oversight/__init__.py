"""Looking at runs and acting on them from outside: views, checks, and who may."""
