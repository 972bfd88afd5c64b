package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"bailiff/chain"
	"bailiff/proxy"
)

type runParams struct {
	policy      string
	audit       string
	server      string
	session     string
	principal   string
	tenant      string
	scopes      []string
	secret      string
	durability  string
	callTimeout time.Duration
	approvers   []string
	state       string // the state database
	url         string // a Streamable HTTP server instead of a command
	// allowDenyAll starts under a policy that would deny every call.
	allowDenyAll bool
	id           identityParams
	// listen serves Streamable HTTP instead of stdio.
	listen listenParams
}

const runListenExample = "bailiff run --policy policy.yaml --listen 127.0.0.1:8931 -- COMMAND [ARG...]"

const runLong = `run starts an MCP server (COMMAND) and stands between it and the client
that started bailiff: every tools/call is decided by the policy before the
server sees it, written to the audit log (synced to disk first, with the
default --durability sync), and only then forwarded, re-encoded from
exactly the arguments that were checked. Refusals come back as tool
results with isError set, naming the check and the rule. Everything else
(resources, prompts, notifications) passes through.

Without --policy every call is denied. A policy with no rule that allows
or asks for the server (by its name: --server) is refused at start,
since it would deny every call too; --allow-deny-all starts anyway. Calls the policy asks a human
about go to the client as an elicitation; a client that cannot ask gets a
refusal naming a pending approval, which 'bailiff approve' grants for one
retry of the same call.

With --url instead of a command, the server is the Streamable HTTP
endpoint at URL and bailiff is its client; the client that started bailiff
still speaks stdio. Path arguments are then not resolved on this machine:
the server may run elsewhere.

With --listen ADDR, bailiff serves the server on Streamable HTTP at
http://ADDR/ (any path) instead of stdio, under its own names, to any
number of clients: each client session is a bailiff session of its own,
with its own instance of the server, taint and budgets, in the one audit
log; messages pass as over stdio. Stateless requests (revision
2026-07-28) have no session: they share one, in which bailiff answers
server/discover and serves the server's names as they are, as gateway
--listen does for one server. The limits are gateway --listen's: loopback only unless --allow-remote, pages
of this machine only, --max-request-bytes, --max-sessions (each runs a
server; default 64) and the --initialize-rate of an address.

stdout carries MCP messages only; bailiff's own messages and the server's
stderr go to stderr.

--metrics ADDR serves Prometheus metrics on a listener of its own, and the
OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT) turn on a trace span per
tools/call, sent over OTLP/HTTP; docs/operations.md says what they hold.`

// denyAll is the policy without --policy: nothing is allowed until a
// policy says so.
const denyAll = "version: 1\nname: deny-all\nrules: []\n"

func newRun(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var p runParams
	c := &cobra.Command{
		Use:   "run [flags] {-- COMMAND [ARG...] | --url URL}",
		Short: "Run an MCP server behind bailiff, on stdio or HTTP",
		Long:  runLong,
		Example: `  bailiff run --policy policy.yaml --audit mail.audit.jsonl -- npx -y mcp-mail-server
  bailiff run --policy fs.yaml --server fs -- npx -y @modelcontextprotocol/server-filesystem /srv/share
  bailiff run --policy policy.yaml --server notes --url http://127.0.0.1:8080/mcp
  bailiff run --policy policy.yaml --listen 127.0.0.1:8931 -- npx -y @modelcontextprotocol/server-everything`,
		Args: func(cmd *cobra.Command, args []string) error {
			return checkRunArgs(p.url, args)
		},
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if err := checkRunFlags(cmd, p); err != nil {
				return err
			}
			if err := p.listen.metrics.check(p.listen.allowRemote); err != nil {
				return err
			}
			if p.listen.addr != "" {
				return checkListen(p.listen)
			}
			return onlyWithListen(cmd, []string{"allow-remote", "max-request-bytes", "max-sessions", "initialize-rate", "initialize-burst"}, runListenExample)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProxy(stdin, stdout, stderr, p, args)
		},
	}
	// Everything from the command on is the command's, flags included.
	c.Flags().SetInterspersed(false)
	// BAILIFF_POLICY, BAILIFF_AUDIT, BAILIFF_SERVER, BAILIFF_PRINCIPAL and
	// BAILIFF_URL stand in for the
	// flags: bailiff init writes them into a client config's env, where no
	// client mistakes them for its own options.
	c.Flags().StringVar(&p.policy, "policy", os.Getenv("BAILIFF_POLICY"), "policy file (default $BAILIFF_POLICY, else deny every call)")
	c.Flags().StringVar(&p.audit, "audit", os.Getenv("BAILIFF_AUDIT"), "audit log to append to, outside every served root (default $BAILIFF_AUDIT, else bailiff-SERVER.audit.jsonl in the user's state directory)")
	c.Flags().StringArrayVar(&p.approvers, "approver-key", strings.Fields(os.Getenv("BAILIFF_APPROVER_KEYS")), "an approver's public key, or a file holding one, whose signed answers count (repeatable; default $BAILIFF_APPROVER_KEYS, space-separated)")
	c.Flags().StringVar(&p.server, "server", os.Getenv("BAILIFF_SERVER"), "the server's name, as rules and servers: sections select it and approval ids begin with it (default $BAILIFF_SERVER, else the base name of the command, or for npx, uvx, node and other launchers the package or script it runs, without its scope, version and server- prefix; with --url the URL's host); name it when that default says little, such as 'stdio'")
	c.Flags().BoolVar(&p.allowDenyAll, "allow-deny-all", os.Getenv("BAILIFF_ALLOW_DENY_ALL") == "1", "start even when the policy has no rule that allows or asks for this server, so that every call is denied (default $BAILIFF_ALLOW_DENY_ALL=1)")
	c.Flags().StringVar(&p.session, "session", "", "session id (default: server, time and a random suffix)")
	c.Flags().StringVar(&p.principal, "principal", os.Getenv("BAILIFF_PRINCIPAL"), "who the agent acts for (default $BAILIFF_PRINCIPAL, else $USER)")
	c.Flags().StringVar(&p.tenant, "tenant", "", "the tenant whose ceiling the principal's calls spend, under a policy's tenants: (default the one tenant local)")
	c.Flags().StringSliceVar(&p.scopes, "scopes", nil, "the principal's scopes")
	c.Flags().StringVar(&p.secret, "secret", "", "file keying the digests of redacted calls (default: a fresh random key)")
	c.Flags().StringVar(&p.durability, "durability", "sync", "when records reach the disk: sync, batch or none")
	c.Flags().StringVar(&p.state, "state", "", stateFlagHelp)
	completeValues(c, "durability", "sync", "batch", "none")
	c.Flags().DurationVar(&p.callTimeout, "call-timeout", 2*time.Minute, "how long the server may take to answer a call")
	c.Flags().StringVar(&p.url, "url", os.Getenv("BAILIFF_URL"), "the server's Streamable HTTP endpoint, instead of a command (default $BAILIFF_URL)")
	p.id.register(c)
	p.listen.example = runListenExample
	// Not run's flags: one principal acts, and each session runs its
	// server, so --max-sessions bounds the servers too.
	p.listen.maxPrincipals, p.listen.serverSessions = 1, 1
	p.listen.registerHTTP(c, 64, "the most HTTP sessions --listen keeps open at once, each with its own instance of the server")
	p.listen.metrics.register(c)
	return c
}

// checkRunArgs: the server is a command or a URL, exactly one of them.
func checkRunArgs(url string, args []string) error {
	if url != "" && len(args) > 0 {
		return usageErr(errors.New("run takes a server command or --url (or $BAILIFF_URL), not both"), "bailiff run --url http://127.0.0.1:8080/mcp")
	}
	if url != "" {
		return nil
	}
	if len(args) == 0 {
		return usageErr(errors.New("run needs the server: a command (after its flags, or after --) or --url URL"), "bailiff run --policy policy.yaml -- COMMAND [ARG...]")
	}
	return nil
}

func checkRunFlags(cmd *cobra.Command, p runParams) error {
	if n := cmd.ArgsLenAtDash(); n > 0 {
		return usageErr(errors.New("the server command goes after bailiff's flags (and an optional --)"), "bailiff run --policy policy.yaml -- COMMAND [ARG...]")
	}
	if p.url != "" {
		u, err := url.Parse(p.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageErr(fmt.Errorf("--url %q is not an http or https URL", p.url), "bailiff run --url http://127.0.0.1:8080/mcp")
		}
	}
	_, err := chain.ParseDurability(p.durability)
	if err != nil {
		return usageErr(err, "")
	}
	for flag, v := range map[string]string{"--policy": p.policy, "--audit": p.audit, "--secret": p.secret} {
		if v == "-" {
			return usageErr(fmt.Errorf("%s cannot be -: standard input and output carry the MCP session", flag), "")
		}
	}
	return nil
}

func runProxy(stdin io.Reader, stdout, stderr io.Writer, p runParams, command []string) error {
	pol, err := policyOrDenyAll(stdin, stderr, p.policy, "bailiff: warning: no --policy: every call is denied")
	if err != nil {
		return err
	}
	server := serverName(p, command)
	if err := checkServerName("--server", server); err != nil {
		return err
	}
	audit := p.audit
	if audit == "" {
		audit = filepath.Join(stateDir(), "bailiff-"+server+".audit.jsonl")
	}
	cwd, _ := os.Getwd()
	roots := writableRoots(pol, server, cwd, command) // no command: the policy's alone
	if err := checkStateOutside(audit, roots); err != nil {
		return err
	}
	approvers, keyFiles, err := loadApproverKeyFiles(stdin, p.approvers, cwd, "run")
	if err != nil {
		return err
	}
	trust := trustGuarded(p.policy, "", p.secret, keyFiles)
	if err := checkOutside(trust, roots); err != nil {
		return err
	}
	approvals, stateFiles, closeState, err := openGatewayState(stderr, p.state, audit, roots)
	if err != nil {
		return err
	}
	defer closeState()
	dur, _ := chain.ParseDurability(p.durability)
	secret, err := loadSecret(stdin, p.secret)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, ok, _ := p.id.config(stdin); (ok || p.id.tokenFile != "") && p.listen.addr != "" {
		// One token read at start would speak for every HTTP client.
		return usageErr(errors.New("run --listen with identity settings: on HTTP each request's bearer token must say whom it acts for, which gateway --listen does"), "bailiff gateway --config gateway.yaml --listen 127.0.0.1:8931, with identity: in the config")
	}
	principal, expiry, err := runPrincipal(ctx, stdin, stderr, p, approvers)
	if err != nil {
		return err
	}
	warnUncovered(stderr, pol, principal)
	if err := checkServed(stderr, pol, p.policy, []string{server}, p.allowDenyAll, servedHow{"--server NAME", "pass --allow-deny-all", "--allow-deny-all"}); err != nil {
		return err
	}
	session := p.session
	if session == "" {
		session = newSessionID(server)
	}
	log, closeLog, err := openAudit(audit, dur)
	if err != nil {
		return err
	}
	defer closeLog()

	if !expiry.IsZero() {
		// The session acts for the token's principal only while the
		// token is valid: it ends when the token expires.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, expiry)
		defer cancel()
	}
	opt := proxy.Options{
		Policy: pol, Log: log, Evidence: chain.OpenEvidence(chain.EvidenceDir(audit)), EvidenceSync: dur == chain.Sync,
		Server: server, Session: session, Principal: principal, Secret: secret,
		Approvals: approvals, ApproverKeys: approvers, Stderr: stderr, CallTimeout: p.callTimeout,
		Ledger: newLedger(approvals), Replica: defaultReplica(approvals.Store),
		Protected: protectedPaths(slices.Concat(stateGuarded(audit), stateFiles, trust)),
	}
	err = serveRun(ctx, stdin, stdout, stderr, opt, p, command, audit)
	if !expiry.IsZero() && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return tokenExpired(expiry, principal.Subject)
	}
	return err
}

func serveRun(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, opt proxy.Options, p runParams, command []string, audit string) error {
	what := strings.Join(command, " ")
	if p.url != "" {
		what = p.url
	}
	var ln net.Listener
	if p.listen.addr != "" {
		// Bound before anything is said of the session: an address in
		// use is the whole story.
		var err error
		if ln, err = net.Listen("tcp", p.listen.addr); err != nil {
			return usageErr(fmt.Errorf("--listen: %v", err), "")
		}
	}
	stopMetrics, err := p.listen.metrics.start(ctx, stderr, &opt)
	if err != nil {
		return err
	}
	defer stopMetrics()
	fmt.Fprintf(stderr, "bailiff: session %s: %s behind policy %s, for %s, audit log %s, state %s\n", opt.Session, what, shortVersion(opt.Policy.Version()), actingFor(opt.Principal), audit, opt.Approvals.Store.Path())
	up := proxy.Upstream{Name: opt.Server, URL: p.url}
	if p.url == "" {
		up.Cmd = exec.Command(command[0], command[1:]...)
		up.Cmd.Env = serverEnviron()
	}
	switch {
	case ln != nil:
		fmt.Fprintf(stderr, "bailiff: serving Streamable HTTP at http://%s/\n", ln.Addr())
		fmt.Fprintln(stderr, "bailiff: warning: clients of revision 2026-07-28 (stateless requests) share one session, its taint and its budgets; clients that open a session each have their own")
		hopt := p.listen.httpOptions()
		hopt.MaxServerSessions = p.listen.maxSessions
		err = proxy.ServeRunHTTP(ctx, opt, ln, up, hopt)
	case p.url != "":
		err = proxy.RunURL(ctx, opt, stdin, stdout, p.url)
	default:
		err = proxy.Run(ctx, opt, stdin, stdout, up.Cmd)
	}
	if err != nil {
		return usageErr(err, "")
	}
	return nil
}

func shortVersion(v string) string {
	if len(v) > 19 {
		return v[:19]
	}
	return v
}

// loadSecret reads the key for digests of redacted calls, or makes a
// fresh random one: digests then bind grants within this process only,
// and nobody can confirm a redacted value by guessing it.
func loadSecret(stdin io.Reader, file string) ([]byte, error) {
	if file != "" {
		return readInput(stdin, file, kindSecret)
	}
	secret := make([]byte, 32)
	_, err := rand.Read(secret)
	return secret, err
}

// openAudit opens (or starts) an audit log for a live session, making its
// directory. The closer it returns closes the log; a log it started that
// holds no record when closed (no session began: the client left, or
// nothing answered) is removed, with the evidence store it started: an
// empty log is no log, and every command that reads logs refuses it.
func openAudit(audit string, dur chain.Durability) (*chain.Writer, func(), error) {
	_, lerr := os.Lstat(audit)
	_, serr := os.Stat(chain.EvidenceDir(audit))
	started, storeThere := lerr != nil, serr == nil
	log, err := openLog(audit, dur)
	if err != nil {
		return nil, func() {}, err
	}
	return log, func() {
		// Removed while the lock is still held: another writer cannot
		// have opened the log in between, and one opening it after
		// starts a file of its own.
		if st, err := os.Stat(audit); started && log.Next() == 0 && err == nil && st.Size() == 0 {
			if !storeThere {
				os.RemoveAll(chain.EvidenceDir(audit))
			}
			os.Remove(audit)
		}
		log.Close()
	}, nil
}

func openLog(audit string, dur chain.Durability) (*chain.Writer, error) {
	if err := os.MkdirAll(filepath.Dir(audit), 0o700); err != nil {
		return nil, usageErr(fmt.Errorf("cannot make the audit log's directory: %v", unwrapPath(err)), "")
	}
	log, err := chain.Open(audit, dur)
	if err != nil {
		var ve *chain.VerifyError
		if errors.As(err, &ve) && ve.Torn {
			return nil, usageErr(fmt.Errorf("%s ends in a torn record", audit), "bailiff repair "+audit+" -o "+audit)
		}
		hint := ""
		if errors.Is(err, chain.ErrLocked) {
			hint = "another bailiff run or gateway is writing " + audit + ": give each its own --audit log"
		}
		return nil, usageErr(fmt.Errorf("cannot open the audit log: %v", err), hint)
	}
	return log, nil
}

// newSessionID names a session the gateway opens: who it fronts, when it
// started (UTC, to the second) and four random bytes, so two sessions
// started in one second never share an id.
func newSessionID(prefix string) string {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	return fmt.Sprintf("%s-%s-%s", prefix, time.Now().UTC().Format("20060102T150405"), hex.EncodeToString(suffix))
}
