"""Application SDK for aophub (see :mod:`aophub.client.hub_client`)."""

from aophub.client.hub_client import HubClient, HubClientError, Watcher, WatchItem, application_url

__all__ = ["HubClient", "HubClientError", "WatchItem", "Watcher", "application_url"]
