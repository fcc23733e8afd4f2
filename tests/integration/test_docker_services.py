"""Docker: an image built FROM the locally made debian:bookworm-slim runs on the engine."""

import uuid

from testcontainers.core.container import DockerContainer

from cluster.services.docker_engine import BASE_IMAGE, docker


def test_container_built_from_bookworm_slim_runs(docker_engine, tmp_path):
    marker = uuid.uuid4().hex
    (tmp_path / "Dockerfile").write_text(
        f"FROM {BASE_IMAGE}\n"
        f"RUN echo {marker} > /custody-marker\n"
        'CMD ["sh", "-c", "cat /custody-marker; cat /etc/debian_version"]\n'
    )
    tag = f"custody-test-base:{marker[:12]}"
    docker("build", "--network", "none", "-t", tag, str(tmp_path))
    try:
        container = DockerContainer(tag).with_kwargs(network_mode="none")
        with container:
            container.get_wrapped_container().wait(timeout=120)
            logs = b"".join(container.get_logs()).decode()
        assert marker in logs
        assert logs.strip().splitlines()[-1].startswith("12.")
    finally:
        docker("image", "rm", "-f", tag, check=False)


def test_compose_v2_is_available(docker_engine):
    result = docker("compose", "version", "--short")
    assert result.stdout.decode().strip().startswith("2.")
