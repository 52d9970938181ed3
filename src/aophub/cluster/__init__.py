"""Hub replicas on one PostgreSQL database: membership, cross-replica fan-out, shared state, the scan leader.

One module per concept: :mod:`~aophub.cluster.membership` (which replicas exist and are alive).
SQLite hubs have none of this: a data directory is one hub.
"""
