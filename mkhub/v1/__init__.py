"""mkhub.v1: generated from proto/mkhub/v1/*.proto (see mkhub/__init__.py)."""
