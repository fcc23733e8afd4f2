"""NiFi 2.3.0's home assembled from Maven Central, cached in `<cache>/nifi-2.3.0`.

The layout follows nifi-assembly's descriptor: lib/ holds the core jars (logging,
nifi-api, nifi-framework-api, nifi-nar-utils, nifi-properties, nifi-property-utils,
nifi-runtime, nifi-server-api, nifi-stateless-api, nifi-python-framework-api) and the
NARs. nifi-per-process-group-logging is left out: Maven Central does not serve it, and
only the per-process-group log appender, which our logback.xml does not use, needs it.
Maven Central serves the framework, jetty, server, provenance repository and standard
services/shared NARs; it does not serve nifi-standard-nar or nifi-update-attribute-nar,
so those two are built here as the nar-maven-plugin builds them: a zip of
META-INF/MANIFEST.MF (Nar-Group, Nar-Id, Nar-Version and the parent's
Nar-Dependency-Group/Id/Version) and META-INF/bundled-dependencies/*.jar, the runtime
dependencies of the NAR's jars (at the versions of NiFi's root pom, imported as a bill
of materials) less what lib/ and the parent chain already hold. nifi-standard-nar bundles
nifi-standard-processors only (its reporting tasks, rules and parameter providers
play no part in these flows); nifi-update-attribute-nar leaves out its UI war.

A `.complete` stamp holding the plan the home was built from marks a finished
assembly: an interrupted one, or a changed plan, assembles again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

NIFI_VERSION = "2.3.0"
GROUP = "org.apache.nifi"
SLF4J_VERSION = "2.0.17"
LOGBACK_VERSION = "1.5.17"
NIFI_API_VERSION = "2.0.0"  # nifi-api has its own releases; NiFi 2.3.0 is built on 2.0.0

# lib/ of nifi-assembly's core.xml: (group, artifact, version).
CORE_JARS = (
    ("org.slf4j", "slf4j-api", SLF4J_VERSION),
    ("org.slf4j", "log4j-over-slf4j", SLF4J_VERSION),
    ("org.slf4j", "jcl-over-slf4j", SLF4J_VERSION),
    ("org.slf4j", "jul-to-slf4j", SLF4J_VERSION),
    ("ch.qos.logback", "logback-classic", LOGBACK_VERSION),
    ("ch.qos.logback", "logback-core", LOGBACK_VERSION),
    (GROUP, "nifi-api", NIFI_API_VERSION),
    *(
        (GROUP, name, NIFI_VERSION)
        for name in (
            "nifi-framework-api",
            "nifi-nar-utils",
            "nifi-properties",
            "nifi-property-utils",
            "nifi-python-framework-api",
            "nifi-runtime",
            "nifi-server-api",
            "nifi-stateless-api",
        )
    ),
)

# NARs Maven Central serves, taken as they are.
SERVED_NARS = (
    "nifi-jetty-nar",
    "nifi-framework-nar",
    "nifi-server-nar",
    "nifi-provenance-repository-nar",
    "nifi-standard-services-api-nar",
    "nifi-standard-shared-nar",
    "nifi-record-serialization-services-nar",  # JsonTreeReader, AvroRecordSetWriter (bench records)
)


@dataclass(frozen=True)
class BuiltNar:
    """A NAR built here: its id, its parent NAR's id and the jars it is built from."""

    nar_id: str
    parent_id: str
    jars: tuple[str, ...]
    parents: tuple[str, ...] = field(default=())  # the whole parent chain, nearest first


BUILT_NARS = (
    BuiltNar(
        "nifi-standard-nar",
        "nifi-standard-shared-nar",
        ("nifi-standard-processors",),
        ("nifi-standard-shared-nar", "nifi-standard-services-api-nar"),
    ),
    BuiltNar(
        "nifi-update-attribute-nar",
        "nifi-jetty-nar",
        ("nifi-utils", "nifi-update-attribute-processor", "nifi-update-attribute-model"),
        ("nifi-jetty-nar",),
    ),
)


class AssemblyError(RuntimeError):
    """NiFi's home could not be put together; the message says which step and why."""


def manifest_text(nar_id: str, parent_id: str | None, version: str = NIFI_VERSION, group: str = GROUP) -> str:
    """META-INF/MANIFEST.MF of a NAR, with the attributes NiFi's NAR loader reads
    (the nar-maven-plugin's names), lines wrapped at 72 bytes as the JAR format asks."""
    attributes = [
        ("Manifest-Version", "1.0"),
        ("Created-By", "custody bench flow --against-nifi"),
        ("Nar-Id", nar_id),
        ("Nar-Group", group),
        ("Nar-Version", version),
    ]
    if parent_id:
        attributes += [
            ("Nar-Dependency-Group", group),
            ("Nar-Dependency-Id", parent_id),
            ("Nar-Dependency-Version", version),
        ]
    attributes += [("Build-Tag", f"rel/nifi-{version}"), ("Clone-During-Instance-Class-Loading", "false")]
    return "".join(_manifest_line(f"{name}: {value}") for name, value in attributes) + "\r\n"


def _manifest_line(line: str) -> str:
    """One attribute: at most 72 bytes a line, continued on lines starting with a space."""
    data = line.encode()
    pieces = [data[:72]]
    data = data[72:]
    while data:
        pieces.append(b" " + data[:71])
        data = data[71:]
    return "".join(piece.decode() + "\r\n" for piece in pieces)


def artifact_of(jar_name: str) -> str:
    """The artifact id in a jar's file name: what comes before `-<version>`."""
    match = _VERSIONED.match(jar_name)
    return match.group(1) if match else jar_name.removesuffix(".jar")


_VERSIONED = re.compile(r"^(.+?)-\d[^/]*\.jar$")


def bundled_jars(candidates: list[str], provided: set[str]) -> list[str]:
    """The jar file names a NAR bundles: its runtime dependencies (`candidates`) less
    the artifacts lib/ or a parent NAR already provides (`provided`, file names; any
    version), which NiFi's parent-first class loaders would find first anyway."""
    provided_artifacts = {artifact_of(name) for name in provided}
    return sorted(name for name in candidates if name.endswith(".jar") and artifact_of(name) not in provided_artifacts)


def build_nar(path: Path, nar_id: str, parent_id: str | None, jars: list[Path]) -> None:
    """Write the NAR `path`: its manifest, then the jars under bundled-dependencies.
    The directories are entries of their own, before their files: NiFi's NarUnpacker
    creates a directory when it meets its entry, not for a file's parent."""
    temporary = path.with_name(path.name + ".part")
    with zipfile.ZipFile(temporary, "w", zipfile.ZIP_STORED) as nar:
        nar.writestr("META-INF/", b"")
        nar.writestr("META-INF/MANIFEST.MF", manifest_text(nar_id, parent_id))
        nar.writestr("META-INF/bundled-dependencies/", b"")
        for jar in jars:
            nar.write(jar, f"META-INF/bundled-dependencies/{jar.name}")
    os.replace(temporary, path)


def pom_text(name: str, dependencies: list[tuple[str, str, str, str]], copy_only: bool = False) -> str:
    """A pom for Maven to copy artifacts (group, artifact, version, type): as its
    dependencies (`dependency:copy-dependencies`, with their runtime dependencies), or,
    with `copy_only`, as the dependency plugin's artifact items (`dependency:copy`,
    those files alone: the NARs' poms name repositories beyond Maven Central, which a
    walk of their dependencies would ask)."""
    if copy_only:
        items = "".join(
            "            <artifactItem>\n"
            f"              <groupId>{group}</groupId><artifactId>{artifact}</artifactId>\n"
            f"              <version>{version}</version><type>{kind}</type>\n"
            "            </artifactItem>\n"
            for group, artifact, version, kind in dependencies
        )
        body = (
            "  <build>\n    <plugins>\n      <plugin>\n"
            "        <groupId>org.apache.maven.plugins</groupId>\n"
            "        <artifactId>maven-dependency-plugin</artifactId>\n"
            f"        <configuration>\n          <artifactItems>\n{items}          </artifactItems>\n"
            "        </configuration>\n      </plugin>\n    </plugins>\n  </build>\n"
        )
    else:
        entries = "".join(
            "    <dependency>\n"
            f"      <groupId>{group}</groupId>\n      <artifactId>{artifact}</artifactId>\n"
            f"      <version>{version}</version>\n      <type>{kind}</type>\n"
            "    </dependency>\n"
            for group, artifact, version, kind in dependencies
        )
        # NiFi's root pom as a bill of materials: the versions NiFi's own build chose.
        body = (
            "  <dependencyManagement>\n    <dependencies>\n      <dependency>\n"
            f"        <groupId>{GROUP}</groupId><artifactId>nifi</artifactId><version>{NIFI_VERSION}</version>\n"
            "        <type>pom</type><scope>import</scope>\n"
            "      </dependency>\n    </dependencies>\n  </dependencyManagement>\n"
            f"  <dependencies>\n{entries}  </dependencies>\n"
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        f"  <groupId>io.custody.bench</groupId>\n  <artifactId>{name}</artifactId>\n  <version>1</version>\n"
        f"  <packaging>pom</packaging>\n{body}</project>\n"
    )


def plan() -> dict:
    """What the home is built from; a change of it assembles again."""
    return {
        "version": NIFI_VERSION,
        "core": [list(jar) for jar in CORE_JARS],
        "served": list(SERVED_NARS),
        "built": [[nar.nar_id, nar.parent_id, list(nar.jars)] for nar in BUILT_NARS],
    }


def nifi_home(cache: Path) -> Path:
    """NiFi's home under `cache`, assembled on first use (Maven caches in ~/.m2)."""
    home = cache / f"nifi-{NIFI_VERSION}"
    stamp = home / ".complete"
    wanted = json.dumps(plan(), sort_keys=True)
    if stamp.exists() and stamp.read_text() == wanted:
        return home
    if shutil.which("mvn") is None:
        raise AssemblyError("assembling NiFi needs Maven (`mvn`) on PATH; install the maven package")
    if home.exists():
        shutil.rmtree(home)
    work = home / "build"
    lib = home / "lib"
    lib.mkdir(parents=True)
    core = [(group, artifact, version, "jar") for group, artifact, version in CORE_JARS]
    served = [(GROUP, nar, NIFI_VERSION, "nar") for nar in SERVED_NARS]
    _copy(work / "lib", core + served, lib, transitive=False)
    provided = {path.name for path in lib.iterdir()}
    for nar in BUILT_NARS:
        target = work / f"{nar.nar_id}-jars"
        _copy(work / nar.nar_id, [(GROUP, jar, NIFI_VERSION, "jar") for jar in nar.jars], target, transitive=True)
        in_parents = provided | _parent_jars(lib, nar.parents)
        names = bundled_jars(os.listdir(target), in_parents)
        build_nar(lib / f"{nar.nar_id}-{NIFI_VERSION}.nar", nar.nar_id, nar.parent_id, [target / n for n in names])
    shutil.rmtree(work)
    stamp.write_text(wanted)
    return home


def _parent_jars(lib: Path, parents: tuple[str, ...]) -> set[str]:
    names: set[str] = set()
    for parent in parents:
        with zipfile.ZipFile(lib / f"{parent}-{NIFI_VERSION}.nar") as nar:
            names |= {
                os.path.basename(entry)
                for entry in nar.namelist()
                if entry.startswith("META-INF/bundled-dependencies/") and entry.endswith(".jar")
            }
    return names


def _copy(project: Path, dependencies: list[tuple[str, str, str, str]], target: Path, transitive: bool) -> None:
    """Maven copies `dependencies` (and, if `transitive`, their runtime dependencies)
    into `target`. Maven's output is kept for the error: stdout carries the JSON only."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "pom.xml").write_text(pom_text(project.name, dependencies, copy_only=not transitive))
    command = ["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(project / "pom.xml")]
    if transitive:
        command += ["dependency:copy-dependencies", f"-DoutputDirectory={target}", "-DincludeScope=runtime"]
    else:
        command += ["dependency:copy", f"-DoutputDirectory={target}"]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise AssemblyError(f"Maven could not fetch {project.name}'s artifacts: {done.stdout.strip()[-2000:]}")
