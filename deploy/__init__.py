"""Container build files and the local stack's tooling (scripts/stack); not installed with the package."""
