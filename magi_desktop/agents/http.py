"""``magi mcp --transport streamable-http``: the MCP server over HTTP, for a client on another machine or in a
browser, and for the app's own in-process server (Settings → Agents).

- **A bearer token** is required on every request (``Authorization: Bearer …``); without it the answer is
  401. It is made on first use and kept in the OS keyring (service ``magi-desktop``), or — where there is no
  keyring backend, as on the headless machine that usually runs an HTTP server — in the file
  ``mcp-http-token`` in the data folder, readable by its owner only (0600). ``magi mcp --show-token``
  prints it, ``--rotate-token`` replaces it; Settings → Agents shows and rotates it too.
- **Loopback by default.** DNS rebinding is refused as the MCP specification asks: the ``Host`` header must
  name the address the server is bound to, and a browser's ``Origin``, when sent, must be that same address
  (or one the user allowed). Binding to another address needs ``--allow-remote`` and either TLS (a
  certificate and its key) or a loud warning that the token travels in clear text.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.llm.openai import KEYRING_SERVICE

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

log = logging.getLogger(__name__)

DEFAULT_PORT = 8737
PATH = "/mcp"
TOKEN_FILE = "mcp-http-token"
TOKEN_BYTES = 32
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def keyring_user(folder: Path) -> str:
    return f"mcp-http:{Path(folder).resolve()}"


def _keyring() -> Any | None:
    """The OS keyring, or None when this machine has no usable backend (headless: the chainer is empty)."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:  # pragma: no cover - keyring is a declared dependency
        return None
    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
        return None
    chained = getattr(backend, "backends", None)
    if chained is not None and not chained:
        return None
    return keyring


@dataclass(frozen=True)
class Token:
    value: str
    kept_in: str                    # "the OS keyring", or the file's path

    def matches(self, offered: str) -> bool:
        return hmac.compare_digest(self.value.encode(), offered.encode())


def _write_private(path: Path, value: str) -> None:
    """Write ``value`` to ``path`` readable by its owner only, replacing it whole (never a half-written token)."""
    temporary = path.with_name(path.name + ".new")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, value.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(temporary, 0o600)              # umask or an older file's mode cannot widen it
    os.replace(temporary, path)


def http_token(folder: Path, *, rotate: bool = False) -> Token:
    """The bearer token of the HTTP server on the memory in ``folder``: made on first use (or anew with
    ``rotate``), kept in the OS keyring or else in a 0600 file in the folder."""
    folder = Path(folder)
    ring = _keyring()
    if ring is not None:
        from keyring.errors import KeyringError

        try:
            value = None if rotate else ring.get_password(KEYRING_SERVICE, keyring_user(folder))
            if not value:
                value = secrets.token_urlsafe(TOKEN_BYTES)
                ring.set_password(KEYRING_SERVICE, keyring_user(folder), value)
            return Token(value, "the OS keyring")
        except KeyringError as exc:
            log.warning("the OS keyring is unavailable (%s); the token is kept in a file", exc)
    path = folder / TOKEN_FILE
    folder.mkdir(parents=True, exist_ok=True)
    value = "" if rotate or not path.exists() else path.read_text(encoding="utf-8").strip()
    if not value:
        value = secrets.token_urlsafe(TOKEN_BYTES)
        _write_private(path, value)
    elif path.stat().st_mode & 0o077:
        os.chmod(path, 0o600)               # someone widened it: the token is the only lock on the memory
        log.warning("%s was readable by others; it is owner-only again (rotate the token if in doubt)", path)
    return Token(value, str(path))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def transport_security(host: str, port: int, origins: tuple[str, ...] = ()) -> TransportSecuritySettings:
    """Host and Origin checks against DNS rebinding: the bound address (and on loopback its other names)."""
    from mcp.server.transport_security import TransportSecuritySettings  # the SDK only once a server starts

    bracketed = f"[{host}]" if ":" in host and not host.startswith("[") else host
    names = list(LOOPBACK_NAMES) if is_loopback(host) else [bracketed]
    schemes = ("http", "https")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in names],
        allowed_origins=[f"{scheme}://{name}:{port}" for name in names for scheme in schemes] + list(origins))


class BearerAuth:
    """ASGI middleware: a request without the right ``Authorization: Bearer`` token is answered 401."""

    def __init__(self, app: Any, token: Token):
        self.app, self.token = app, token

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        scheme, _, offered = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and offered.strip() and self.token.matches(offered.strip()):
            await self.app(scope, receive, send)
            return
        said = b'{"error": "unauthorized", "message": "send Authorization: Bearer <token> (magi mcp --show-token)"}'
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"),
                                (b"www-authenticate", b'Bearer realm="magi-desktop"')]})
        await send({"type": "http.response.body", "body": said})


def http_app(server: Any, token: Token, host: str, port: int, origins: tuple[str, ...] = ()) -> Any:
    """The ASGI app: the SDK's streamable HTTP endpoint at ``/mcp``, behind the token and the Host/Origin check."""
    app = server.streamable_http_app(streamable_http_path=PATH, host=host,
                                     transport_security=transport_security(host, port, origins))
    return BearerAuth(app, token)


@dataclass
class HttpOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    allow_remote: bool = False
    certfile: str | None = None
    keyfile: str | None = None
    origins: tuple[str, ...] = ()

    def check(self) -> None:
        """Refuse what would expose the memory by accident (``InvalidInput`` says what to add)."""
        from ..core import InvalidInput

        if not is_loopback(self.host) and not self.allow_remote:
            raise InvalidInput(f"--host {self.host} is reachable from other machines: add --allow-remote to mean it "
                               "(and --tls-cert/--tls-key so the token is not sent in clear text)")
        if (self.certfile is None) != (self.keyfile is None):
            raise InvalidInput("give both --tls-cert and --tls-key, or neither")
        if not 0 < self.port < 65536:
            raise InvalidInput(f"--port {self.port} is not a TCP port")

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"{'https' if self.certfile else 'http'}://{host}:{self.port}{PATH}"


def uvicorn_server(server: Any, token: Token, options: HttpOptions) -> Any:
    """A uvicorn server for the MCP server (not started)."""
    import uvicorn

    options.check()
    if not is_loopback(options.host) and options.certfile is None:
        log.warning("WARNING: serving the memory on %s without TLS: the bearer token and everything the memory "
                    "answers cross the network in clear text. Give --tls-cert and --tls-key.", options.host)
    config = uvicorn.Config(http_app(server, token, options.host, options.port, options.origins), host=options.host,
                            port=options.port, ssl_certfile=options.certfile, ssl_keyfile=options.keyfile,
                            log_level="warning", lifespan="on")
    return uvicorn.Server(config)


class BackgroundHttp:
    """The HTTP server in a thread of this process (the app's, Settings → Agents): started, then stopped."""

    def __init__(self, server: Any, token: Token, options: HttpOptions):
        self._uvicorn = uvicorn_server(server, token, options)
        self._uvicorn.install_signal_handlers = lambda: None     # the app owns the signals, not this thread
        self._thread = threading.Thread(target=self._run, name="magi-mcp-http", daemon=True)
        self.options = options

    def _run(self) -> None:
        try:
            self._uvicorn.run()
        except SystemExit:              # uvicorn's answer to a port it cannot bind: start() reports it
            log.debug("the MCP HTTP server stopped at startup", exc_info=True)

    def start(self, timeout: float = 10.0) -> None:
        self._thread.start()
        waited = 0.0
        while not self._uvicorn.started and self._thread.is_alive() and waited < timeout:
            threading.Event().wait(0.05)
            waited += 0.05
        if not self._uvicorn.started:
            raise OSError(f"the MCP HTTP server did not start on {self.options.url} (is the port taken?)")

    def stop(self, timeout: float = 10.0) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(timeout)


class AppHttp:
    """The app's in-process HTTP server (Settings → Agents → Serve over HTTP) on the app's own memory: on, off,
    moved to another port, restarted with a rotated token. Loopback only: a server for other machines is
    ``magi mcp --allow-remote`` with TLS, a choice made on a command line, not a checkbox."""

    def __init__(self, memory: Any):
        self.memory = memory
        self._running: BackgroundHttp | None = None
        self.error: str | None = None           # why the last start failed (a taken port), for the settings

    @property
    def url(self) -> str | None:
        return self._running.options.url if self._running is not None else None

    def token(self, *, rotate: bool = False) -> Token:
        return http_token(Path(self.memory.path).parent, rotate=rotate)

    def apply(self, enabled: bool, port: int) -> str | None:
        """Serve on ``port`` (restarting if it moved), or stop; returns the error when it could not start."""
        if self._running is not None and (not enabled or self._running.options.port != port):
            self.stop()
        if enabled and self._running is None:
            self.start(port)
        return self.error

    def start(self, port: int) -> None:
        from .mcp_server import build_server

        self.error = None
        options = HttpOptions(port=port)
        try:
            running = BackgroundHttp(build_server(self.memory), self.token(), options)
            running.start()
        except OSError as exc:
            self.error = f"could not serve on port {port}: {exc}"
            log.error("%s", self.error)
            return
        self._running = running
        log.info("serving MCP over HTTP on %s", options.url)

    def rotate(self) -> Token:
        """A new token; a running server is restarted with it, so the old one is refused at once."""
        token = self.token(rotate=True)
        if self._running is not None:
            port = self._running.options.port
            self.stop()
            self.start(port)
        return token

    def stop(self) -> None:
        if self._running is not None:
            self._running.stop()
            self._running = None
