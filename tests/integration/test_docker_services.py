"""Docker: an image built FROM the locally made debian:bookworm-slim runs on the engine."""

import sys
import uuid
from pathlib import Path

from testcontainers.core.container import DockerContainer

from cluster.services.docker_engine import BASE_IMAGE, docker
from cluster.services.install import cache_dir


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


def test_docker_compose_says_when_compose_fails_and_lives_outside_any_checkout(docker_engine, tmp_path):
    # A compose file that does not exist: compose exits 1, and so must `docker compose`
    # (the wheel's console script, once linked in, exited 0 whatever compose returned).
    missing = tmp_path / "no-such-compose.yml"
    result = docker("compose", "-f", str(missing), "config", check=False)
    assert result.returncode != 0, result
    assert str(missing) in result.stderr.decode(errors="replace")
    # The plugin is a copy in the cache, not a link into this checkout's virtual
    # environment, which a user may delete while another checkout still uses Docker.
    plugin = (Path.home() / ".docker" / "cli-plugins" / "docker-compose").resolve()
    assert plugin.is_relative_to(cache_dir()) and not plugin.is_relative_to(Path(sys.prefix).resolve()), plugin
