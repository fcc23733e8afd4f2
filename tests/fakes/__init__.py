"""In-memory stand-ins for the services the product talks to, for unit tests."""
