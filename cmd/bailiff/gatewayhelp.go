package main

// gatewayLong is gateway's help, the config it reads included.
const gatewayLong = `gateway starts every server in the config and serves the client that
started bailiff as one MCP server whose tools are named <server>.<tool>;
a call is routed on the first dot. All calls share one session and one
audit log, so output read from one server taints what is sent through
another. The servers' prompts are <server>.<name> and their resources
<server>.<uri>, routed the same way; completions and logging go to the
server they name, or to every one; the servers' sampling, elicitation and
roots requests reach the client, and its answers the server that asked.
With one server, unprefixed: true serves its names as they are.

With --listen ADDR it serves Streamable HTTP at http://ADDR/ instead of
stdio, to any number of clients, each in a session of its own (with its
own instances of the servers, started with the session, and stopped when
it ends), in one audit log: sessions for clients before revision
2026-07-28; a client of 2026-07-28 sends stateless requests, and those
of one principal share one session. ADDR must be a
loopback address unless --allow-remote; a request whose Origin is not on
this machine, or whose Host is not (DNS rebinding), is refused, as is a
body over --max-request-bytes. A request that would open a session gets
503 and Retry-After when --max-sessions are open, or when its address
has opened more than --initialize-burst at --initialize-rate a second;
the open sessions go on.

--metrics ADDR serves Prometheus metrics on a listener of its own (never
the MCP port), and the OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT) turn
on a trace span per tools/call, sent over OTLP/HTTP; docs/operations.md
says what they hold.

With identity: in the config, --listen requires a bearer token on every
request (401 and OAuth Protected Resource Metadata without a good one), and
each principal gets a session, and servers, of its own (docs/identity.md).

gateway.yaml (paths relative to it; ${VAR} in a server's command, args,
env and cwd comes from the environment):

  policy: policy.yaml          # default: deny every call
  audit: /var/lib/bailiff/gateway.audit.jsonl   # outside every served root
  approver_keys: [lee.pub]     # whose signed answers to asks count
  durability: sync             # sync, batch or none
  state: state.db              # asks, approvals, tenant counters (default: the user's state dir);
                               # postgres://USER@HOST/DB?search_path=NAME for replicas sharing it
  replica: eu-1                # with PostgreSQL: this replica's name in its session records (default HOST:PID)
  allow_deny_all: false        # true: start though the policy serves a server not at all
  unprefixed: false            # true (one server only): its names without "<server>."
  principal: {subject: ana, scopes: [mail.send], email: ana@corp.example}
  # or, instead of principal:, whom a verified token names (docs/identity.md;
  # on stdio the token is $BAILIFF_ID_TOKEN or --id-token-file):
  # identity: {issuer: https://id.corp.example, audience: https://bailiff.corp.example/mcp,
  #            groups: {sales: [mail.send]}}
  servers:
    mail:
      command: npx
      args: [-y, mcp-mail-server]
      env: {SMTP_HOST: smtp.example.com}
    fs:
      command: npx
      args: [-y, "@modelcontextprotocol/server-filesystem", /srv/share]
    notes:                     # a Streamable HTTP server, instead of a command
      url: http://127.0.0.1:8080/mcp`
