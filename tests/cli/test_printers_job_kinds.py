"""`mkhub get` tables of JobSets and LeaderWorkerSets: their CRDs' printer columns, as kubectl prints them."""

from __future__ import annotations

from hub.ctl.printers import table

CREATED = {"creationTimestamp": "1970-01-01T00:00:00Z"}


def test_a_jobset_prints_its_terminal_state_restarts_completed_and_suspend() -> None:
    done = {"metadata": {"name": "train", **CREATED}, "spec": {"suspend": False},
            "status": {"terminalState": "Completed", "restarts": 0,
                       "conditions": [{"type": "Completed", "status": "True"}]}}
    queued = {"metadata": {"name": "queued", **CREATED}, "spec": {"suspend": True}}
    assert table("JobSet", [done, queued], now=120.0).splitlines() == [
        "NAME     TERMINALSTATE   RESTARTS   COMPLETED   SUSPENDED   AGE",
        "train    Completed       0          True        false       2m",
        "queued                                          true        2m",
    ]


def test_a_leader_worker_set_prints_ready_desired_and_up_to_date_groups() -> None:
    lws = {"metadata": {"name": "serve", **CREATED}, "spec": {"replicas": 3},
           "status": {"readyReplicas": 2, "updatedReplicas": 3}}
    assert table("LeaderWorkerSet", [lws], now=120.0).splitlines() == [
        "NAME    READY   DESIRED   UP-TO-DATE   AGE",
        "serve   2       3         3            2m",
    ]


def test_a_pod_prints_ready_and_kubectls_status_gated_until_kueue_admits_it() -> None:
    containers = {"containers": [{"name": "c"}]}
    gated = {"metadata": {"name": "waits", **CREATED},
             "spec": {**containers, "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}}
    running = {"metadata": {"name": "runs", **CREATED}, "spec": containers,
               "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    assert table("Pod", [gated, running], now=120.0).splitlines() == [
        "NAME    READY   STATUS            AGE",
        "waits   0/1     SchedulingGated   2m",
        "runs    1/1     Running           2m",
    ]


def test_ray_kinds_print_kuberays_columns() -> None:
    job = {"metadata": {"name": "rj", **CREATED},
           "status": {"jobStatus": "SUCCEEDED", "jobDeploymentStatus": "Complete", "rayClusterName": "rj-raycluster-ab12c",
                      "startTime": "1970-01-01T00:00:10Z", "endTime": "1970-01-01T00:00:20Z"}}
    assert table("RayJob", [job], now=120.0).splitlines() == [
        "NAME   JOB STATUS   DEPLOYMENT STATUS   RAY CLUSTER NAME      START TIME             END TIME               AGE",
        "rj     SUCCEEDED    Complete            rj-raycluster-ab12c   1970-01-01T00:00:10Z   1970-01-01T00:00:20Z   2m",
    ]
    cluster = {"metadata": {"name": "rc", **CREATED},
               "status": {"desiredWorkerReplicas": 1, "availableWorkerReplicas": 1, "state": "ready"}}
    assert table("RayCluster", [cluster], now=120.0).splitlines()[1].split() == ["rc", "1", "1", "ready", "2m"]
    service = {"metadata": {"name": "svc", **CREATED}, "status": {"serviceStatus": "Running", "numServeEndpoints": 1}}
    assert table("RayService", [service], now=120.0).splitlines()[1].split() == ["svc", "Running", "1", "2m"]


def test_deployments_replicasets_and_statefulsets_print_kubectls_replica_counts() -> None:
    deploy = {"metadata": {"name": "web", **CREATED}, "spec": {"replicas": 3},
              "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    assert table("Deployment", [deploy], now=120.0).splitlines() == [
        "NAME   READY   UP-TO-DATE   AVAILABLE   AGE",
        "web    2/3     3            2           2m",
    ]
    rs = {"metadata": {"name": "web-abc", **CREATED}, "spec": {"replicas": 3}, "status": {"replicas": 3}}
    assert table("ReplicaSet", [rs], now=120.0).splitlines()[1].split() == ["web-abc", "3", "3", "0", "2m"]
    sts = {"metadata": {"name": "db", **CREATED}, "spec": {}, "status": {"readyReplicas": 1}}
    assert table("StatefulSet", [sts], now=120.0).splitlines()[1].split() == ["db", "1/1", "2m"]


def test_a_cronjob_prints_its_schedule_suspend_active_jobs_and_last_schedule() -> None:
    cj = {"metadata": {"name": "nightly", **CREATED}, "spec": {"schedule": "* * * * *"},
          "status": {"active": [{"name": "nightly-1"}], "lastScheduleTime": "1970-01-01T00:01:00Z"}}
    assert table("CronJob", [cj], now=120.0).splitlines() == [
        "NAME      SCHEDULE    TIMEZONE   SUSPEND   ACTIVE   LAST SCHEDULE   AGE",
        "nightly   * * * * *   <none>     false     1        60s             2m",
    ]
