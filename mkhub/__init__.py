"""Generated protocol code of mkhub (from proto/mkhub/); nothing here is hand-written.

The modules under mkhub/v1 are built by setup.py (pip install -e . or pip
install .) or by ``python -m hub.federation.codegen``; they are not committed.
"""
