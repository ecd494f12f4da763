"""The web dashboard (``mkhub serve --ui-listen``): a read-only JSON API, live updates, static pages."""
