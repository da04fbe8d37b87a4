"""imgbuild: check, plan, build, certify and publish SGLang serving images."""

__version__ = "0.1.0"
