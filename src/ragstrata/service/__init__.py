"""The HTTP service: FastAPI app, wire schemas, API keys, tenancy, ingestion jobs and metrics.

Nothing heavy is imported here: the CLI's ``keys`` commands use :mod:`.keys` (standard library
only), and only :mod:`.app`, its routers (``routes_*``) and what they share (:mod:`.deps`,
:mod:`.handlers`) need the ``service`` extra (``pip install 'ragstrata[service]'``).
"""
