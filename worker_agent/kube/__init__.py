"""``mkagent --kubeconfig``: the agent on a worker cluster's own API server.

* :mod:`.cluster`: the cluster's Kueue objects (through :class:`hub.store.kube.KubeStore`)
  into the agent's engine, the watch thread and the writer thread;
* :mod:`.jobs`: the runner that runs a won copy as a ``batch/v1`` Job in the worker;
* :mod:`.mirror`: each copy kept as a Workload object in the worker (and taken back
  from there after a restart), and the garbage collector of orphaned copies and Jobs;
* :mod:`.logs`: pod logs for the hub's ``LogsRequest`` items (``mkhub logs``).
"""
