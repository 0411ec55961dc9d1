"""Bundled data: generated, never downloaded."""
