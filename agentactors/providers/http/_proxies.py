"""Proxies from the environment: whether one is configured, which one a URL goes through, and a refused tunnel.

``urllib.request.getproxies()`` — what httpx and aiohttp read — returns the ``NO_PROXY`` list too, under the key
``"no"``: an environment that sets only ``NO_PROXY`` (common on corporate machines and in CI, and in this project's
own tests) configures no proxy, and must not be taken for one that does.  Taken so, every provider's sender was
httpx's client instead of the h11 sender — and aiohttp paid its two worker-thread hops per request — for a proxy
that does not exist.

Which proxy a URL goes through is decided as httpx decides it (:func:`proxy_for`), so the owned senders that speak
to proxies (the httpx client, the aiohttp sender) agree on every URL: aiohttp's own reading of ``NO_PROXY`` ignored
an entry's port (``NO_PROXY=10.0.0.5:8443`` bypassed nothing) and read the environment in a worker thread per
request.

A proxy that answers ``CONNECT`` with an error is :func:`refused_tunnel`: an ``httpx.ProxyError`` naming the proxy
(never its credentials) and the answer, not retried when asking again cannot help (407: the credentials are wrong or
missing; 403: the proxy's policy forbids the host).
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

__all__ = ["proxies_configured", "proxy_for", "refused_tunnel", "shown_proxy"]

#: A proxy's answer to ``CONNECT`` that asking again will not change.
_FINAL_REFUSALS = frozenset({401, 403, 407})


def proxies_configured() -> bool:
    """Whether the environment sets a proxy for some scheme (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``...):
    ``NO_PROXY`` alone is not one.  Read each call (an environment may change)."""
    import urllib.request  # here, not at the top: it imports http.client and email (~10 ms)

    return any(scheme != "no" for scheme in urllib.request.getproxies())


def proxy_for(url: str) -> str | None:
    """The proxy URL (credentials included, as configured) a request to ``url`` goes through, or ``None``: direct.

    As httpx reads the environment (``httpx._utils.get_environment_proxies`` and its ``URLPattern``): the scheme's
    proxy (``HTTPS_PROXY`` for ``https``), else ``ALL_PROXY``; ``NO_PROXY`` entries, comma-separated: ``*`` (none
    proxied), a host or IP address (``example.com`` also covers its subdomains, ``.example.com`` only them), with a
    port (only that port), or a URL (``http://example.com``: only that scheme).  Read on each call.
    """
    import urllib.request

    import httpx

    info = urllib.request.getproxies()
    target = httpx.URL(url)
    for entry in (name.strip() for name in info.get("no", "").split(",")):
        if entry == "*":
            return None
        if entry and _bypasses(entry, target):
            return None
    for scheme in (target.scheme, "all"):
        proxy = info.get(scheme)
        if proxy:
            return proxy if "://" in proxy else f"http://{proxy}"
    return None


def _bypasses(entry: str, target: httpx.URL) -> bool:
    """Whether the ``NO_PROXY`` entry ``entry`` covers ``target`` (httpx's patterns, see :func:`proxy_for`)."""
    import httpx

    if "://" in entry:
        pattern = entry
    elif _is_ip(entry, 4):
        pattern = f"all://{entry}"
    elif _is_ip(entry, 6):
        pattern = f"all://[{entry}]"
    elif entry.lower() == "localhost":
        pattern = f"all://{entry}"
    else:
        pattern = f"all://*{entry}"
    try:
        parsed = httpx.URL(pattern)
    except (httpx.InvalidURL, ValueError):
        return False  # an entry httpx could not read either: it bypasses nothing
    if parsed.scheme != "all" and parsed.scheme != target.scheme:
        return False
    host = parsed.host
    if host and host != "*":
        if host.startswith("*."):
            regex = rf"^.+\.{re.escape(host[2:])}$"
        elif host.startswith("*"):
            regex = rf"^(.+\.)?{re.escape(host[1:])}$"
        else:
            regex = rf"^{re.escape(host)}$"
        if not re.match(regex, target.host):
            return False
    return parsed.port is None or parsed.port == target.port


def _is_ip(text: str, version: int) -> bool:
    try:
        address = ipaddress.ip_address(text.split("/")[0])
    except ValueError:
        return False
    return address.version == version


def shown_proxy(proxy: str) -> str:
    """``proxy`` as an error may show it: its scheme, host and port, never the credentials in it."""
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host = parts.hostname or "?"
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "the configured proxy"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{port}"


def refused_tunnel(answer: str, proxy: str | None, target: str, cause: BaseException | None) -> httpx.ProxyError:
    """The error for a proxy that answered ``CONNECT`` with ``answer`` (``"407 Proxy Authentication Required"``).

    It names the proxy (:func:`shown_proxy`: without its credentials; ``None``: a client's own, unknown here) and the
    tunnel's ``target`` (``host:port``); it carries ``retryable = False`` when asking again cannot help (407, 403,
    401), which the classifier honours.  ``cause`` becomes its ``__cause__``.
    """
    import httpx

    where = f"the proxy {shown_proxy(proxy)}" if proxy is not None else "the proxy"
    err = httpx.ProxyError(f"{where} refused the tunnel to {target}: {answer}")
    status = answer[:3]
    if status.isdigit() and int(status) in _FINAL_REFUSALS:
        err.retryable = False  # type: ignore[attr-defined]  # read by errors.explicit_retryable
    err.__cause__ = cause
    return err
