"""Whether the environment configures a proxy: what decides the HTTP senders' proxy paths.

``urllib.request.getproxies()`` — what httpx and aiohttp read — returns the ``NO_PROXY`` list too, under the key
``"no"``: an environment that sets only ``NO_PROXY`` (common on corporate machines and in CI, and in this project's
own tests) configures no proxy, and must not be taken for one that does.  Taken so, every provider's sender was
httpx's client instead of the h11 sender — and aiohttp paid its two worker-thread hops per request — for a proxy
that does not exist.
"""

from __future__ import annotations

__all__ = ["proxies_configured"]


def proxies_configured() -> bool:
    """Whether the environment sets a proxy for some scheme (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``...):
    ``NO_PROXY`` alone is not one.  Read each call (an environment may change)."""
    import urllib.request  # here, not at the top: it imports http.client and email (~10 ms)

    return any(scheme != "no" for scheme in urllib.request.getproxies())
