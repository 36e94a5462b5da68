"""Slow, plain reference implementations the tests compare the product with."""
