"""The hub as a service: mkhub serve, the Control gRPC service, manifest admission."""
