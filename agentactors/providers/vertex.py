"""Vertex AI endpoints: the host of a location and the path of a publisher's model.

``https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/publishers/{publisher}/
models/{model}:{method}``; the ``global`` location is served at ``aiplatform.googleapis.com`` (no region prefix).
Shared by the Vertex constructors of the Gemini wire (:meth:`GeminiProvider.vertex
<agentactors.providers.gemini.provider.GeminiProvider.vertex>`, publisher ``google``) and of the Anthropic wire
(:meth:`AnthropicProvider.vertex <agentactors.providers.anthropic.provider.AnthropicProvider.vertex>`, publisher
``anthropic``), which are those wires with another URL, bearer auth and (for Claude) a body tweak.

A model is named as Vertex's console and SDKs spell it: ``gemini-2.5-flash``, ``models/…``,
``publishers/{publisher}/models/…`` or the full ``projects/{p}/locations/{l}/publishers/{publisher}/models/…``;
:func:`vertex_model_name` takes each to the bare name, and refuses (``ValueError``, naming what to pass) one of
another publisher (Claude asked of the Gemini wire: Vertex serves it under ``publishers/anthropic`` with the
Messages wire), another project or location, or no publisher model at all (a tuned model's endpoint).

The project and location not given come from ``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION``, the names
Google's SDKs read (google-genai, google-auth): :func:`vertex_project` and :func:`vertex_location`.  A provider
on Google's default credentials (no ``token_provider``) takes a project neither given nor in a variable from
them, as google-auth's ``default()`` — so google-genai and ``anthropic.AnthropicVertex`` — does: the
``project_id`` of the service-account key file ``GOOGLE_APPLICATION_CREDENTIALS`` names
(:func:`credentials_project`).
"""

from __future__ import annotations

import json
import os
import re
from urllib.parse import quote

__all__ = ["CREDENTIALS_ENV", "LOCATION_ENV", "PROJECT_ENV", "check_vertex_location", "check_vertex_project",
           "credentials_project", "one_place", "vertex_base_url", "vertex_location", "vertex_model_name",
           "vertex_model_url", "vertex_project"]

#: The environment variable a project not given is read from (google-genai's and google-auth's name).
PROJECT_ENV = "GOOGLE_CLOUD_PROJECT"
#: The environment variable a location not given is read from (google-genai's name).
LOCATION_ENV = "GOOGLE_CLOUD_LOCATION"
#: The environment variable naming the credential file google-auth's default credentials load first.
CREDENTIALS_ENV = "GOOGLE_APPLICATION_CREDENTIALS"
#: More than a key file holds (about 2.4 KB): what is read of one at most, so a path such as ``/dev/zero`` ends.
_MAX_KEY_FILE = 1 << 20

#: A Google Cloud location: ``global``, a region (``us-central1``, ``northamerica-northeast1``) or a multi-region
#: (``us``, ``eu``); not a zone (``us-central1-a``), a host or a URL.
_LOCATION = re.compile(r"global|[a-z]+(?:-[a-z]+\d+)?")
#: A project id (``my-proj-123``), a project number, or a domain-scoped id (``example.com:my-proj``).
_PROJECT = re.compile(r"[a-z0-9][a-z0-9.:-]*")
#: A credential file's ``type`` (``authorized_user``, ``external_account``): one that is not is not repeated.
_KIND = re.compile(r"[a-z_]{1,40}")
_RESOURCE = re.compile(r"projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/(?P<rest>.+)")
_PUBLISHED = re.compile(r"publishers/(?P<publisher>[^/]+)/models/(?P<name>[^/]+)")
#: Which constructor serves a publisher's models, and the bare-name prefixes that tell the publisher.
_CONSTRUCTORS = {"google": "GeminiProvider.vertex", "anthropic": "AnthropicProvider.vertex"}
_NAME_PUBLISHERS = (("claude", "anthropic"), ("gemini-", "google"), ("gemma-", "google"))


def check_vertex_location(location: object, *, source: str = "location") -> str:
    """``location`` if it is a Google Cloud location (``us-central1``, ``global``); errors name ``source``."""
    if not isinstance(location, str):
        raise TypeError(f"{source} must be a str such as 'us-central1' or 'global', not {type(location).__name__}")
    if _LOCATION.fullmatch(location) is None:
        raise ValueError(f"{source} must be a Vertex AI location such as 'us-central1' or 'global', not {location!r}")
    return location


def check_vertex_project(project: object, *, source: str = "project") -> str:
    """``project`` if it is a Google Cloud project id or number (``my-proj-123``); errors name ``source``."""
    if not isinstance(project, str):
        raise TypeError(f"{source} must be a str, the Google Cloud project id, not {type(project).__name__}")
    if _PROJECT.fullmatch(project) is None:
        raise ValueError(f"{source} must be a Google Cloud project id such as 'my-proj-123', not {project!r}")
    return project


def vertex_project(project: object, *, constructor: str, variables: tuple[str, ...] = (PROJECT_ENV,),
                   from_credentials: bool = False) -> str:
    """``project``, else the first of ``variables`` set (blank is unset), else — ``from_credentials``: the provider
    uses Google's default credentials — :func:`credentials_project`'s; checked, errors naming where it came from.

    None of them is a ``ValueError`` naming ``project=``, the variables and (``from_credentials``) the credential
    file, with why it named no project.  Without ``from_credentials`` (a ``token_provider``: its credentials are
    not the file's) the file is not read.
    """
    if project is not None:  # an explicit one wins, and one that cannot be is refused, not replaced
        return check_vertex_project(project)
    for variable in variables:
        found = os.environ.get(variable, "")
        if found.strip():
            return check_vertex_project(found, source=variable)
    needs = f"{constructor} needs a Google Cloud project: pass project='my-proj-123', or set {' or '.join(variables)}"
    if not from_credentials:
        raise ValueError(needs)
    from_file, why = credentials_project()
    if from_file is None:
        raise ValueError(f"{needs}, or point {CREDENTIALS_ENV} at a service-account key file holding a project_id "
                         f"({why})")
    return from_file


def credentials_project() -> tuple[str | None, str]:
    """The project google-auth's ``default()`` finds in the credential file, read as JSON (google-auth is not
    imported); else ``None`` and why there is none, to end an error message with.

    Only ``GOOGLE_APPLICATION_CREDENTIALS``'s file is read, and only a service account's names its project
    (``project_id``; an ``authorized_user`` file names none, an ``external_account`` one is resolved by asking a
    server).  The other default credentials — gcloud's user (its project is ``gcloud config``'s, which google-auth
    asks of the ``gcloud`` command) and the metadata server — are not asked here: that is a subprocess or a
    network call, too slow for a constructor, which a running event loop may call.  Reading one small local file
    is not, and it happens only when no project was given.

    A ``project_id`` that cannot be a project is a ``ValueError`` naming the file's field.  Nothing the file holds
    but that field, nor the variable's value (which may be the key file's contents put there instead of its
    path), is in a message, and no exception is chained (a ``JSONDecodeError`` keeps the whole text).
    """
    path = os.environ.get(CREDENTIALS_ENV, "")
    if not path.strip():
        return None, f"{CREDENTIALS_ENV} is not set; gcloud's and the metadata server's projects are not looked up"
    failed = ""
    try:
        with open(path, "rb") as file:
            raw = file.read(_MAX_KEY_FILE + 1)
        info = json.loads(raw) if len(raw) <= _MAX_KEY_FILE else None
    except (OSError, ValueError, RecursionError) as exc:  # not JSON (or nested past the parser); the "path" may be
        # the key file's contents: only the exception's type is said
        failed = type(exc).__name__
    if failed:
        return None, f"the file {CREDENTIALS_ENV} names could not be read as JSON: {failed}"
    if not isinstance(info, dict):
        return None, f"the file {CREDENTIALS_ENV} names is not a credential file's JSON object"
    kind = info.get("type")
    if kind != "service_account":
        what = f"a credential file of type {kind!r}" if isinstance(kind, str) and _KIND.fullmatch(kind) else "a file"
        return None, f"{CREDENTIALS_ENV} names {what}, not a service-account key: only a key's project_id is read"
    if "project_id" not in info:
        return None, f"{CREDENTIALS_ENV} names a service-account key file without a project_id"
    found = info["project_id"]
    source = f"the project_id of {CREDENTIALS_ENV}'s key file"
    if not isinstance(found, str):
        raise ValueError(f"{source} must be a str, the Google Cloud project id, not {type(found).__name__}")
    return check_vertex_project(found, source=source), ""


def vertex_location(location: object, *, default: str, parameter: str = "location") -> str:
    """``location``, else :data:`LOCATION_ENV`'s value (blank is unset), else ``default``; checked, errors naming
    ``parameter`` or the variable."""
    if location is not None:
        return check_vertex_location(location, source=parameter)
    found = os.environ.get(LOCATION_ENV, "")
    return check_vertex_location(found, source=LOCATION_ENV) if found.strip() else default


def one_place(value: str | None, other: str | None, *, name: str, other_name: str) -> str | None:
    """``value``, else ``other``: the other Vertex constructor's word for the same place (Claude's constructor says
    ``region``, as the Anthropic SDK does; Gemini's ``location``, as Google's does), so either spelling works.

    :raises ValueError: both are given and name two places (which one was meant cannot be told).
    """
    if other is None:
        return value
    if value is not None and value != other:
        raise ValueError(f"{name}={value!r} and {other_name}={other!r} name two places: give one")
    return other


def vertex_base_url(location: str) -> str:
    """``https://{location}-aiplatform.googleapis.com``, or ``https://aiplatform.googleapis.com`` for ``global``."""
    try:
        check_vertex_location(location)
    except (TypeError, ValueError):
        raise ValueError(f"not a Vertex AI location: {location!r} (such as 'us-central1' or 'global')") from None
    return "https://aiplatform.googleapis.com" if location == "global" else f"https://{location}-aiplatform.googleapis.com"


def vertex_model_name(model: str, *, publisher: str, project: str, location: str) -> str:
    """The bare name of ``model`` for ``publisher``'s path (see the module docstring); ``ValueError`` otherwise."""
    name = model
    resource = _RESOURCE.fullmatch(name)
    if resource is not None:
        if resource.group("project") != project or resource.group("location") != location:
            raise ValueError(
                f"model {model!r} is in project {resource.group('project')!r}, location "
                f"{resource.group('location')!r}; this provider calls project {project!r}, location {location!r}: "
                "pass the bare model name, or make a provider for that project and location"
            )
        name = resource.group("rest")
    named_by = None
    published = _PUBLISHED.fullmatch(name)
    if published is not None:
        named_by, name = published.group("publisher"), published.group("name")
    elif name.startswith("models/"):
        name = name[len("models/"):]
    if "/" in name or not name:
        raise ValueError(
            f"model {model!r} is not a Vertex AI publisher model ('gemini-2.5-flash', 'publishers/{publisher}/"
            "models/<name>'): a tuned model's or a deployed endpoint's name is not served by this provider"
        )
    if named_by is None:
        lowered = name.lower()
        named_by = next((owner for prefix, owner in _NAME_PUBLISHERS if lowered.startswith(prefix)), publisher)
    if named_by != publisher:
        other = _CONSTRUCTORS.get(named_by)
        serving = _CONSTRUCTORS.get(publisher, "this provider")
        use = f": use {other}(...)" if other else f", which {serving} does not serve"
        raise ValueError(f"model {model!r} is published on Vertex AI by {named_by!r}, not {publisher!r}{use}")
    return name


def vertex_model_url(base_url: str, *, project: str, location: str, publisher: str, model: str, method: str) -> str:
    """``{base_url}/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{method}``."""
    name = vertex_model_name(model, publisher=publisher, project=project, location=location)
    return (
        f"{base_url.rstrip('/')}/v1/projects/{quote(project, safe='')}/locations/{quote(location, safe='')}"
        f"/publishers/{publisher}/models/{quote(name, safe='-._~@')}:{method}"
    )
