"""`custody services status` on a work directory where nothing was started answers for
every service, each unhealthy and saying how to start it, instead of crashing."""

from cluster.services.stack import SERVICE_NAMES, ServiceStack


def test_status_of_services_never_started_here_names_how_to_start_them(tmp_path):
    status = ServiceStack(tmp_path / "services").status(("zookeeper", "hdfs", "spark", "kafka"))
    assert set(status) == {"zookeeper", "hdfs", "spark", "kafka"} and set(status) <= set(SERVICE_NAMES)
    for name in ("hdfs", "spark", "kafka"):
        assert status[name]["healthy"] is False
        assert f"custody services up --only {name}" in status[name]["error"], status[name]
