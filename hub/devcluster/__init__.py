"""``mkhub dev-cluster``: a local stand-in for a Kubernetes cluster — the embedded store,
the Kubernetes API (hub.kubeapi), and a minimal Job controller, scheduler/kubelet and
garbage collector that run batch/v1 Jobs as simulated pods."""
