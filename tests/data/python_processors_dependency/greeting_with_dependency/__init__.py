from .shouting import ShoutGreeting

__all__ = ["ShoutGreeting"]
