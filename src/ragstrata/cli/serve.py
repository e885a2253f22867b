"""The serving commands: ``serve`` (HTTP API and web page), ``mcp`` (MCP server over an
index) and ``keys`` (the service's API keys)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ragstrata.cli.common import _Command, _fail, _Group, err, out
from ragstrata.cli.options import ConfigOpt, DataDirOpt, IndexOpt, JsonOpt
from ragstrata.config import RagConfig
from ragstrata.errors import ConfigError, RagError


def serve(
    host: Annotated[
        str | None, typer.Option("--host", help="Interface (default: service.host, 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="TCP port (default: service.port, 8000).")
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", help="Keys and collections (default: $RAGSTRATA_HOME/service)."),
    ] = None,
    config: ConfigOpt = None,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
    forwarded_allow_ips: Annotated[
        str | None,
        typer.Option(
            "--forwarded-allow-ips",
            help="Proxy addresses trusted for X-Forwarded-For (comma list, '*': any; default: "
            "uvicorn's FORWARDED_ALLOW_IPS, else 127.0.0.1).",
        ),
    ] = None,
) -> None:
    """Run the HTTP API and web page (FastAPI on uvicorn, one process; see docs/service.md)."""
    try:
        cfg = RagConfig.load(config_file=config)
        overrides: dict[str, Any] = {
            k: v for k, v in (("host", host), ("port", port)) if v is not None
        }
        if data_dir is not None:
            overrides["data_dir"] = data_dir
        if overrides:
            from dataclasses import replace

            cfg = replace(cfg, service=replace(cfg.service, **overrides))
        try:
            import uvicorn

            from ragstrata.pipeline import Ragstrata
            from ragstrata.service.app import create_app
        except ImportError as exc:
            from ragstrata.errors import MissingDependencyError

            raise MissingDependencyError(exc.name or "fastapi", "service") from exc
        service_app = create_app(cfg)
        state = service_app.state.service  # it holds the data directory (serve.lock)
        _check_port_free(cfg.service.host, cfg.service.port)
        warm_up = getattr(state.registry.embedder, "warm_up", None)
        if callable(warm_up):
            warm_up()  # load (or export) the model now, not on the first request
        with Ragstrata(cfg, embedder=state.registry.embedder) as models:
            models.warm_up_reader()  # the refusal check's reader, likewise
        err.print(
            f"ragstrata serving {state.data_dir} on http://{cfg.service.host}:{cfg.service.port}"
            f" ({len(state.keys.records())} API keys)",
            highlight=False,
        )
    except RagError as exc:
        raise _fail(exc) from exc
    try:
        uvicorn.run(
            service_app,
            host=cfg.service.host,
            port=cfg.service.port,
            log_level=log_level,
            workers=1,
            timeout_keep_alive=cfg.service.keep_alive_s,
            timeout_graceful_shutdown=30,
            forwarded_allow_ips=forwarded_allow_ips,
        )
    except SystemExit as exc:
        from uvicorn.config import STARTUP_FAILURE

        if exc.code == STARTUP_FAILURE:  # uvicorn logged why; its 3 means "partial ingest" here
            err.print("error: the server did not start (uvicorn's error above)", highlight=False)
            raise typer.Exit(1) from None
        raise


def _check_port_free(host: str, port: int) -> None:
    """Raise ConfigError when ``host:port`` cannot be bound (another server holds it, or the
    address is not this machine's), before the models load and before "serving" is printed:
    uvicorn would fail only after both, with exit status 3. The probe socket is closed at once
    (``SO_REUSEADDR`` as uvicorn sets it, so a port in TIME_WAIT is not called busy)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise ConfigError(f"service.host {host!r} cannot be resolved ({exc})") from exc
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc} (another server "
                "on that port? choose one with --port or service.port)"
            ) from exc


def mcp(
    index: IndexOpt = None,
    config: ConfigOpt = None,
    transport: Annotated[
        str, typer.Option("--transport", help="stdio (default) or streamable-http.")
    ] = "stdio",
    host: Annotated[
        str, typer.Option("--host", help="Interface for streamable-http.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port for streamable-http.")] = 8000,
    log_level: Annotated[
        str, typer.Option("--log-level", help="Server log level (stderr).")
    ] = "WARNING",
    allowed_hosts: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="A Host header streamable-http accepts (name:port or name:*), repeatable; "
            "needed to check Host and Origin on a --host other than loopback.",
        ),
    ] = None,
) -> None:
    """Serve the index to MCP clients (tools search and ask, documents as resources; see
    docs/mcp.md). stdio by default; streamable-http serves http://HOST:PORT/mcp."""
    try:
        from ragstrata.service.mcp import serve as serve_mcp

        cfg = RagConfig.load(config_file=config).with_index(index)
        if transport == "streamable-http":
            err.print(
                f"ragstrata MCP server for {cfg.index_path} on http://{host}:{port}/mcp",
                highlight=False,
            )
        serve_mcp(
            cfg,
            transport=transport,
            host=host,
            port=port,
            log_level=log_level,
            allowed_hosts=allowed_hosts or (),
        )
    except RagError as exc:
        raise _fail(exc) from exc


keys_app = typer.Typer(
    cls=_Group,
    name="keys",
    help="Create, list and revoke the service's API keys.",
    no_args_is_help=True,
)


def _key_store(data_dir: Path | None, config: Path | None) -> Any:
    from ragstrata.service.keys import KEYS_FILE, KeyStore

    cfg = RagConfig.load(config_file=config)
    return KeyStore((data_dir or cfg.service.data_path(cfg.home)) / KEYS_FILE)


@keys_app.command("create", cls=_Command)
def keys_create(
    tenant: Annotated[str, typer.Option("--tenant", help="Tenant id the key acts for.")],
    name: Annotated[str, typer.Option("--name", help="A label for the key.")] = "",
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Search/ask only; no upload or delete.")
    ] = False,
    scopes: Annotated[
        str | None,
        typer.Option(
            "--scopes",
            help="Comma-separated scopes instead of the default read,write: read, write, "
            "metrics (GET /metrics, every tenant's counts: for your scraper's key).",
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Create an API key; the key is printed once and only its salted hash is stored."""
    chosen: tuple[str, ...] = ("read",) if read_only else ("read", "write")
    if scopes is not None:
        chosen = tuple(s.strip() for s in scopes.split(",") if s.strip())
    try:
        key, record = _key_store(data_dir, config).create(tenant, name=name, scopes=chosen)
    except RagError as exc:
        raise _fail(exc, json_out=json_out) from exc
    if json_out:
        print(json.dumps(record.public() | {"key": key}, indent=2))
    else:
        print(key)
        err.print(
            f"key {record.key_id} for tenant {record.tenant} ({', '.join(record.scopes)}); "
            "store it now: it cannot be shown again",
            highlight=False,
        )


@keys_app.command("list", cls=_Command)
def keys_list(
    data_dir: DataDirOpt = None, config: ConfigOpt = None, json_out: JsonOpt = False
) -> None:
    """List API keys (ids, tenants, scopes; never the keys)."""
    try:
        records = [r.public() for r in _key_store(data_dir, config).records()]
    except RagError as exc:
        raise _fail(exc, json_out=json_out) from exc
    if json_out:
        print(json.dumps(records, indent=2))
        return
    table = Table(title=f"{len(records)} API keys")
    for column in ("key_id", "tenant", "name", "scopes", "created", "revoked"):
        table.add_column(column)
    for r in records:
        table.add_row(
            r["key_id"],
            r["tenant"],
            r["name"],
            ",".join(r["scopes"]),
            r["created"],
            "yes" if r["revoked"] else "",
        )
    out.print(table)


@keys_app.command("revoke", cls=_Command)
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="The key id (see `ragstrata keys list`).")],
    data_dir: DataDirOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Revoke an API key; a running server refuses it from its next request."""
    try:
        record = _key_store(data_dir, config).revoke(key_id)
    except RagError as exc:
        raise _fail(exc) from exc
    err.print(f"revoked key {record.key_id} of tenant {record.tenant}", highlight=False)
