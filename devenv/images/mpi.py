"""The MPI operator's pi example image, `mpioperator/mpi-pi:openmpi` (examples/v2beta1/pi of the pinned
operator, v0.8.0), on Debian bookworm with OpenMPI and OpenSSH.

Laid out as upstream's build/base, openmpi and pi Dockerfiles lay it out, for the example's pods
(manifests/samples/mpijob.yaml): user `mpiuser`, uid 1000 (the pods' `runAsUser`), home and working
directory /home/mpiuser; the program at /home/mpiuser/pi (hack/images/mpi-pi.c, compiled in a build
root of its own, so no compiler is in the image); ssh on port 2222 for client and server, host keys
neither checked nor remembered (the operator mounts its Secret `<job>-ssh` read-only at
`sshAuthMountPath`: id_rsa, id_rsa.pub, authorized_keys, root-owned, mode 0644); and
/home/mpiuser/.sshd_config, with which a worker runs `sshd -De -f ~/.sshd_config` as mpiuser: pid
file in the home, the job's private key as host key, StrictModes off. The launcher runs `mpirun`
with the operator's hostfile (/etc/mpi/hostfile, OMPI_MCA_* variables) and reaches each worker's sshd.
No entrypoint (the pods give the command), like upstream's OpenMPI image.
"""

from __future__ import annotations

from pathlib import Path

from devenv import versions
from devenv.images.oci import ImageConfig
from devenv.images.rootfs import DEBIAN_SUITE, DPKG_EXCLUDES, PATH, debian, mmdebstrap, run

IMAGE = "mpioperator/mpi-pi:openmpi"
USER = "mpiuser"
UID = 1000
HOME = f"/home/{USER}"
SSH_PORT = 2222
PROGRAM = f"{HOME}/pi"
SOURCE = versions.REPO_ROOT / "hack" / "images" / "mpi-pi.c"
PACKAGES = ("openmpi-bin", "openssh-server", "openssh-client", "usr-is-merged")
# init-system-helpers (which openssh-server needs) asks for `usrmerge | usr-is-merged`, and apt takes
# usrmerge with Perl (46 MB) even when usr-is-merged comes too: they go again (the root is
# merged-/usr already, which usr-is-merged asserts).
UNWANTED = (
    "usrmerge",
    "libfile-find-rule-perl",
    "libnumber-compare-perl",
    "libtext-glob-perl",
    "perl",
    "libperl5.36",
    "perl-modules-5.36",
)
# mmdebstrap empties /run last; the image's hooks do it themselves, keeping sshd's directory there.
RUN_SKIP = ("cleanup/run",)
# The throwaway root the program is compiled in: Debian's OpenMPI compiler wrapper and headers.
BUILD_PACKAGES = ("gcc", "libc6-dev", "libopenmpi-dev")
CONFIG = ImageConfig(env={"PATH": PATH}, cmd=["bash"], workdir=HOME)

# Configuration files: path in the image -> content. The ssh client's and the system sshd's are
# drop-ins, read before Debian's own defaults (the first value read wins).
SSH_FILES = {
    "/etc/ssh/ssh_config.d/mpi-operator.conf": (
        f"StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\nPort {SSH_PORT}\n"
    ),
    "/etc/ssh/sshd_config.d/mpi-operator.conf": f"Port {SSH_PORT}\nStrictModes no\n",
    f"{HOME}/.sshd_config": (
        f"PidFile {HOME}/sshd.pid\nHostKey {HOME}/.ssh/id_rsa\nStrictModes no\nPort {SSH_PORT}\n"
    ),
}


def compile_hooks(source: str, binary: str) -> list[str]:
    """mmdebstrap hooks that compile `source` (a file in the work directory) with OpenMPI's `mpicc`
    in the build root and bring the program back as `binary`."""
    return [
        f"upload {source} /tmp/{source}",
        f'chroot "$1" mpicc -O2 -o /tmp/{binary} /tmp/{source} -lm',
        f"download /tmp/{binary} {binary}",
    ]


def staged(path: str) -> str:
    """The name a file of the image has in the work directory before it is uploaded."""
    return path.strip("/").replace("/", "_")


def image_hooks(binary: str, config_files: dict[str, str]) -> list[str]:
    """mmdebstrap hooks that add the user, the program (`binary`, from the work directory) and the
    configuration files (staged in the work directory)."""
    hooks = [
        f'chroot "$1" dpkg --purge {" ".join(UNWANTED)}',
        f'chroot "$1" useradd --create-home --uid {UID} --user-group --shell /bin/sh {USER}',
        f"upload {binary} {PROGRAM}",
        f'chmod 0755 "$1{PROGRAM}"',
        # sshd's privilege separation directory, for an sshd started as root (the operator's default
        # worker command `sshd -De`): kept where mmdebstrap would empty /run (RUN_SKIP), the rest
        # of /run emptied as it would.
        'find "$1/run" -mindepth 1 -maxdepth 1 ! -name lock -exec rm -rf {} +',
        'mkdir -m 0755 "$1/run/sshd"',
    ]
    hooks += [f"upload {staged(path)} {path}" for path in config_files]
    hooks.append(f'chroot "$1" chown {USER}:{USER} {HOME}/.sshd_config')
    return hooks


def inputs() -> tuple[str, ...]:
    return (
        DEBIAN_SUITE,
        *PACKAGES,
        *BUILD_PACKAGES,
        *UNWANTED,
        *DPKG_EXCLUDES,
        f"{USER}:{UID}",
        SOURCE.read_text(),
        *(f"{path}\n{content}" for path, content in sorted(SSH_FILES.items())),
        *compile_hooks("pi.c", "pi"),
        *image_hooks("pi", SSH_FILES),
        *RUN_SKIP,
    )


def build(work: Path, rootfs: Path) -> None:
    (work / "pi.c").write_text(SOURCE.read_text())
    run(mmdebstrap(BUILD_PACKAGES, "/dev/null", compile_hooks("pi.c", "pi")), cwd=work)
    for path, content in SSH_FILES.items():
        (work / staged(path)).write_text(content)
    debian(PACKAGES, image_hooks("pi", SSH_FILES), RUN_SKIP)(work, rootfs)
