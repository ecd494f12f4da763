"""The Kubernetes store back end: the Store over a Kubernetes API server (the only
package of mkhub that imports ``kubernetes``).

* :mod:`.requests`: pure request builders (verb, path, query, body);
* :mod:`.transport`: sends them with the official client's configuration and pool;
* :mod:`.gathered`: a batch of independent writes at once, through libcurl's multi interface;
* :mod:`.ratelimit`: client-side QPS/burst;
* :mod:`.informer` and :mod:`.cache`: list-then-watch per kind into a local cache;
* :mod:`.store`: :class:`KubeStore`, reads from the cache, writes to the server;
* :mod:`.lease`: leader election over a coordination.k8s.io/v1 Lease;
* :mod:`.records`: the store for the hub's Events, with a rate limit of their own.
"""

from .lease import LeaderElection, LeaseConfig
from .store import KubeStore, KubeStoreOptions, NotLeader
from .transport import ApiClientTransport, TransportError, load_configuration

__all__ = [
    "ApiClientTransport",
    "KubeStore",
    "KubeStoreOptions",
    "LeaderElection",
    "LeaseConfig",
    "NotLeader",
    "TransportError",
    "load_configuration",
]
