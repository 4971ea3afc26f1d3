"""Shared pieces of the gRPC tests: the grpc import gate, certificates, the
C++ training stand-in, process cleanup."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import List, Optional

import pytest


def require_grpc() -> None:
    """grpcio is required by the tests (python/requirements-dev.txt): missing,
    the module fails to import, never skips (a broken install skipped every
    gRPC test; issue 26)."""
    import grpc
    del grpc   # only whether it imports


def make_certs(directory: str) -> dict:
    """A CA, a server certificate for localhost/127.0.0.1 and a client
    certificate, made at test time with `cryptography` (no key committed)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def key():
        return ec.generate_private_key(ec.SECP256R1())

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = key()
    ca = (x509.CertificateBuilder().subject_name(name("mlbridge test CA")).issuer_name(name("mlbridge test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))

    def leaf(cn: str, san: Optional[list]) -> tuple:
        k = key()
        b = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(ca.subject).public_key(k.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
             .not_valid_after(now + datetime.timedelta(days=1)))
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return k, b.sign(ca_key, hashes.SHA256())

    skey, scert = leaf("localhost", [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    ckey, ccert = leaf("client", None)
    pem = lambda c: c.public_bytes(serialization.Encoding.PEM)  # noqa: E731
    kpem = lambda k: k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,  # noqa: E731
                                     serialization.NoEncryption())
    out = {"ca": pem(ca), "server_cert": pem(scert), "server_key": kpem(skey), "client_cert": pem(ccert),
           "client_key": kpem(ckey)}
    for k, v in out.items():
        with open(os.path.join(directory, k + ".pem"), "wb") as f:
            f.write(v)
    return out


def find_testenv() -> str:
    """The C++ stand-in compiler (tests/grpc/testenv.cc), or skip/fail."""
    p = os.environ.get("MLBRIDGE_GRPC_TESTENV")
    if not p and os.environ.get("MLBRIDGE_BUILD_DIR"):
        p = os.path.join(os.environ["MLBRIDGE_BUILD_DIR"], "mlbridge-grpc-testenv")
    if not p or not os.path.exists(p):
        found = shutil.which("mlbridge-grpc-testenv")
        p = found or p
    if not p or not os.path.exists(p):
        if os.environ.get("CI"):
            pytest.fail("mlbridge-grpc-testenv not found under CI (set MLBRIDGE_GRPC_TESTENV)")
        pytest.skip("mlbridge-grpc-testenv not built (set MLBRIDGE_GRPC_TESTENV)")
    return p


class Proc:
    """A child process that prints a JSON ready line with its port; killed on exit."""

    def __init__(self, argv: List[str], env: Optional[dict] = None) -> None:
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, text=True)
        line = self.p.stdout.readline()
        if not line:
            err = self.p.stderr.read()
            self.p.wait()
            raise RuntimeError(f"{argv[0]} did not start: {err}")
        self.port = json.loads(line)["port"]
        self.target = f"127.0.0.1:{self.port}"

    def wait(self, timeout: float = 30.0) -> int:
        return self.p.wait(timeout)

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        for f in (self.p.stdout, self.p.stderr):
            if f:
                f.close()

    def __enter__(self) -> "Proc":
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


PYTHON = sys.executable
