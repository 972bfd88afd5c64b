package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/identity"
	"bailiff/internal/clientconfig"
	"bailiff/proxy"
	"bailiff/state"
)

// gatewayConfig is gateway.yaml. Paths in it are relative to the file.
type gatewayConfig struct {
	Policy     string `yaml:"policy"`
	Audit      string `yaml:"audit"`
	Durability string `yaml:"durability"`
	// State is the state database (default: state.db in the user's state
	// directory).
	State  string `yaml:"state"`
	Secret string `yaml:"secret"`
	// Replica names this gateway in its session records when replicas
	// share a PostgreSQL state database (default HOST:PID there).
	Replica string `yaml:"replica"`
	// ApproverKeys are public keys (or files holding them, relative to the
	// config) whose signed answers to asks count.
	ApproverKeys []string                  `yaml:"approver_keys"`
	Principal    engine.Principal          `yaml:"principal"`
	Servers      map[string]*serverCommand `yaml:"servers"`
	// AllowDenyAll starts even when the policy has no rule that allows
	// or asks for one of the servers.
	AllowDenyAll bool `yaml:"allow_deny_all"`
	// Unprefixed serves the one server's names as they are, without
	// "<server>.": a gateway in front of one server, for clients (and the
	// conformance suite) that call its tools by their own names.
	Unprefixed bool `yaml:"unprefixed"`
	// Identity, when set, is how the principal is established: from a
	// verified token, and never from Principal.
	Identity *identity.Config `yaml:"identity"`
}

// serverCommand is one server: a command to start, or the URL of a
// Streamable HTTP endpoint bailiff connects to as a client.
type serverCommand struct {
	URL     string            `yaml:"url"`
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	Cwd     string            `yaml:"cwd"`
}

func loadGatewayConfig(stdin io.Reader, name string) (*gatewayConfig, error) {
	data, err := readInput(stdin, name, kindGatewayConfig)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c gatewayConfig
	if err := dec.Decode(&c); err != nil {
		e := engine.YAMLError(name, data, err)
		hint := ""
		if strings.Contains(e.Error(), `unknown key "headers"`) {
			hint = "bailiff sends no headers (tokens) to an HTTP server yet: a server that needs them stays outside the gateway"
		}
		return nil, usageErr(e, hint)
	}
	if len(c.Servers) == 0 {
		return nil, usageErr(fmt.Errorf("%s: no servers", name), "")
	}
	if c.Unprefixed && len(c.Servers) != 1 {
		return nil, usageErr(fmt.Errorf("%s: unprefixed: true serves one server's names as they are, and there are %d servers: two could name a tool alike", name, len(c.Servers)), "")
	}
	if err := checkConfigPrincipal(name, &c); err != nil {
		return nil, err
	}
	for n, s := range c.Servers {
		switch {
		case engine.CheckServerName(n) != nil:
			return nil, usageErr(fmt.Errorf("%s: %v", name, engine.CheckServerName(n)), "")
		case n == "gateway":
			return nil, usageErr(fmt.Errorf("%s: server name %q is the gateway's own: its tools could not be told apart from another server's", name, n), "")
		case s == nil || (s.Command == "" && s.URL == ""):
			return nil, usageErr(fmt.Errorf("%s: server %q needs a command or a url", name, n), "")
		case s.URL != "" && (s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != ""):
			return nil, usageErr(fmt.Errorf("%s: server %q has a url and a command (or args, env, cwd): it is one or the other", name, n), "")
		}
	}
	for key, v := range map[string]string{"policy": c.Policy, "audit": c.Audit, "secret": c.Secret, "state": c.State} {
		if v == "-" {
			// Joined to a config in the working directory, "-" would stay
			// "-", and read the MCP session's own input as a file.
			return nil, usageErr(fmt.Errorf("%s: %s cannot be -: standard input and output carry the MCP session", name, key), "")
		}
	}
	rel := func(p string) string { return relTo(name, p) }
	c.Policy, c.Audit, c.Secret = rel(c.Policy), rel(c.Audit), rel(c.Secret)
	if !state.IsPostgres(c.State) { // a URL is not a path beside the config
		c.State = rel(c.State)
	}
	if c.Identity != nil {
		c.Identity.JWKSFile = rel(c.Identity.JWKSFile)
	}
	if c.Audit == "" {
		c.Audit = filepath.Join(stateDir(), "bailiff-gateway.audit.jsonl")
	}
	// ${VAR} in a server's command, arguments, environment and directory
	// comes from bailiff's environment, so secrets stay out of the file.
	if err := noTokenToServers(name, &c); err != nil {
		return nil, err
	}
	for n, s := range c.Servers {
		if s.URL != "" {
			s.URL = os.ExpandEnv(s.URL)
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, usageErr(fmt.Errorf("%s: server %q: url %q is not an http or https URL", name, n, s.URL), "")
			}
			continue
		}
		s.Command = os.ExpandEnv(s.Command)
		for i, a := range s.Args {
			s.Args[i] = os.ExpandEnv(a)
		}
		for k, v := range s.Env {
			s.Env[k] = os.ExpandEnv(v)
		}
		s.Cwd = rel(os.ExpandEnv(s.Cwd))
	}
	return &c, nil
}

func newGateway(stdin io.Reader, stderr io.Writer) *cobra.Command {
	var config, tokenFile string
	var lp listenParams
	c := &cobra.Command{
		Use:   "gateway --config gateway.yaml",
		Short: "Serve several MCP servers as one, behind bailiff, on stdio or HTTP",
		Long:  gatewayLong,
		Example: `  bailiff gateway --config gateway.yaml
  bailiff gateway --config gateway.yaml --listen 127.0.0.1:8931
  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 bailiff gateway --config gateway.yaml --listen 127.0.0.1:8931 --metrics 127.0.0.1:9464`,
		Args: noArgs(),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if config == "" {
				return usageErr(errors.New("gateway needs --config (or $BAILIFF_CONFIG)"), "bailiff gateway --config gateway.yaml")
			}
			if config == "-" {
				return usageErr(errors.New("--config cannot be -: standard input and output carry the MCP session"), "")
			}
			if err := lp.metrics.check(lp.allowRemote); err != nil {
				return err
			}
			if lp.addr != "" {
				return checkListen(lp)
			}
			return onlyWithListen(cmd, []string{"allow-remote", "max-request-bytes", "max-sessions", "initialize-rate", "initialize-burst", "max-principals", "max-sessions-per-principal", "max-server-sessions"},
				"bailiff gateway --config gateway.yaml --listen 127.0.0.1:8931")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGateway(stdin, cmd.OutOrStdout(), stderr, config, lp, tokenFile)
		},
	}
	// A client that takes --config for itself (the Inspector CLI) can
	// name the config in the environment instead.
	c.Flags().StringVar(&config, "config", os.Getenv("BAILIFF_CONFIG"), "gateway configuration (YAML; default $BAILIFF_CONFIG)")
	c.Flags().StringVar(&tokenFile, "id-token-file", "", "with identity: in the config and on stdio, the file holding the token that says whom the agent acts for (default $BAILIFF_ID_TOKEN)")
	lp.registerHTTP(c, 256, "the most HTTP sessions --listen keeps open at once")
	lp.metrics.register(c)
	c.Flags().IntVar(&lp.maxPrincipals, "max-principals", 64, "with identity: in the config, the most principals --listen serves at once")
	c.Flags().IntVar(&lp.serverSessions, "max-server-sessions", 64, "the most sessions --listen runs servers for at once (each session that calls a tool has its own)")
	c.Flags().IntVar(&lp.perPrincipal, "max-sessions-per-principal", 0, "with identity: in the config, the most sessions one principal holds open (default a quarter of --max-sessions)")
	return c
}

func runGateway(stdin io.Reader, stdout, stderr io.Writer, config string, lp listenParams, tokenFile string) error {
	c, err := loadGatewayConfig(stdin, config)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	expiry, err := gatewayPrincipal(ctx, stderr, c, &lp, tokenFile)
	if err != nil {
		return err
	}
	pol, err := policyOrDenyAll(stdin, stderr, c.Policy, "bailiff: warning: no policy in the config: every call is denied")
	if err != nil {
		return err
	}
	dur, err := chain.ParseDurability(c.Durability)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %v", config, err), "")
	}
	secret, err := loadSecret(stdin, c.Secret)
	if err != nil {
		return err
	}
	approvers, keyFiles, err := gatewayApprovers(stdin, stderr, c, config)
	if err != nil {
		return err
	}
	roots := gatewayRoots(c, pol)
	if err := checkStateOutside(c.Audit, roots); err != nil {
		return err
	}
	trust := trustGuarded(c.Policy, config, c.Secret, keyFiles)
	if err := checkOutside(trust, roots); err != nil {
		return err
	}
	approvals, stateFiles, closeState, err := openGatewayState(stderr, c.State, c.Audit, roots)
	if err != nil {
		return err
	}
	defer closeState()
	replica, err := replicaName(c.Replica, approvals.Store)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %v", config, err), "")
	}
	names, ups := gatewayUpstreams(c)
	if err := checkServed(stderr, pol, c.Policy, names, c.AllowDenyAll, servedHow{"its key under servers: in " + config, "set allow_deny_all: true in " + config, "allow_deny_all"}); err != nil {
		return err
	}
	log, closeLog, err := openAudit(c.Audit, dur)
	if err != nil {
		return err
	}
	defer closeLog()
	session := newSessionID("gateway")
	if !expiry.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, expiry)
		defer cancel()
	}
	opt := proxy.Options{
		Policy: pol, Log: log, Evidence: chain.OpenEvidence(chain.EvidenceDir(c.Audit)), EvidenceSync: dur == chain.Sync,
		Server: "gateway", Unprefixed: c.Unprefixed, Session: session, Principal: c.Principal, Secret: secret,
		Approvals: approvals, ApproverKeys: approvers, Stderr: stderr,
		Ledger: newLedger(approvals), Replica: replica,
		Protected: protectedPaths(slices.Concat(stateGuarded(c.Audit), stateFiles, trust)),
	}
	if lp.authn == nil {
		// With identity on HTTP, each request's token names its tenant.
		warnUncovered(stderr, pol, c.Principal)
	}
	gatewayBanner(stderr, c, lp, session, names, pol, approvals.Store.Path())
	err = serveGateway(ctx, stdin, stdout, stderr, opt, ups, lp)
	if !expiry.IsZero() && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return tokenExpired(expiry, c.Principal.Subject)
	}
	return err
}

// gatewayBanner says on stderr what the gateway serves, for whom, and
// where its log and state are.
func gatewayBanner(stderr io.Writer, c *gatewayConfig, lp listenParams, session string, names []string, pol *engine.Policy, statePath string) {
	which, who := "session "+session, ", for "+actingFor(c.Principal)
	if lp.addr != "" {
		which = "sessions " + session + "-N, one per client session"
	}
	if lp.authn != nil {
		who = ", each for the principal its token names"
	}
	which += ": gateway for " + strings.Join(names, ", ") + " behind policy " + shortVersion(pol.Version()) + who
	fmt.Fprintf(stderr, "bailiff: %s, audit log %s, state %s\n", which, c.Audit, statePath)
	if lp.addr != "" && lp.authn == nil {
		// The newest clients send stateless requests by default: without
		// identity nothing tells their senders apart.
		fmt.Fprintln(stderr, "bailiff: warning: without identity: in the config, clients of revision 2026-07-28 (stateless requests) share one session, its taint and its budgets; clients that open a session each have their own")
	}
}

// policyOrDenyAll is the named policy, or without one a policy that
// denies everything: no policy must not mean calls pass through.
func policyOrDenyAll(stdin io.Reader, stderr io.Writer, name, warning string) (*engine.Policy, error) {
	pol, err := engine.Load("deny-all", []byte(denyAll))
	if err != nil {
		return nil, err
	}
	if name != "" {
		return loadPolicy(stdin, name, nil)
	}
	fmt.Fprintln(stderr, warning)
	return pol, nil
}

// gatewayApprovers loads the approver keys, once the principal is known,
// so none of them can be the principal's own.
func gatewayApprovers(stdin io.Reader, stderr io.Writer, c *gatewayConfig, config string) ([]string, []guarded, error) {
	approvers, keyFiles, err := loadApproverKeyFiles(stdin, c.ApproverKeys, filepath.Dir(config), "gateway")
	if err != nil {
		return nil, nil, err
	}
	if err := checkApprovers(stderr, approvers, c.Principal.Subject); err != nil {
		return nil, nil, err
	}
	return approvers, keyFiles, nil
}

// checkApprovers refuses an approver key named for the principal and
// warns when there is none: run and gateway say the same.
func checkApprovers(stderr io.Writer, approvers []string, subject string) error {
	if err := noPrincipalKey(approvers, subject); err != nil {
		return err
	}
	if len(approvers) == 0 {
		fmt.Fprintln(stderr, "bailiff: warning: no approver keys: asks the client cannot put to a human can never be approved")
	}
	return nil
}

// gatewayRoots is where the local servers and the policy may write: the
// audit state and what the gateway trusts must lie outside all of it.
func gatewayRoots(c *gatewayConfig, pol *engine.Policy) []clientconfig.Writable {
	var roots []clientconfig.Writable
	for _, n := range slices.Sorted(maps.Keys(c.Servers)) {
		s := c.Servers[n]
		if s.URL != "" {
			continue // nothing of it runs here, nothing it is given is a path here
		}
		dir := s.Cwd
		if dir == "" {
			dir, _ = os.Getwd()
		}
		roots = append(roots, writableRoots(nil, n, dir, append([]string{s.Command}, s.Args...))...)
	}
	return append(roots, writableRoots(pol, "", "", nil)...)
}

// gatewayUpstreams is the config's servers in name order, so sessions
// start them, and the banner names them, the same way every time.
func gatewayUpstreams(c *gatewayConfig) ([]string, []proxy.Upstream) {
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	var ups []proxy.Upstream
	for _, n := range names {
		s := c.Servers[n]
		if s.URL != "" {
			ups = append(ups, proxy.Upstream{Name: n, URL: s.URL})
			continue
		}
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Dir = s.Cwd
		cmd.Env = serverEnviron()
		keys := make([]string, 0, len(s.Env))
		for k := range s.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			cmd.Env = append(cmd.Env, k+"="+s.Env[k])
		}
		ups = append(ups, proxy.Upstream{Name: n, Cmd: cmd})
	}
	return names, ups
}

func serveGateway(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, opt proxy.Options, ups []proxy.Upstream, lp listenParams) error {
	stopMetrics, err := lp.metrics.start(ctx, stderr, &opt)
	if err != nil {
		return err
	}
	defer stopMetrics()
	if lp.addr != "" {
		ln, err := net.Listen("tcp", lp.addr)
		if err != nil {
			return usageErr(fmt.Errorf("--listen: %v", err), "")
		}
		fmt.Fprintf(stderr, "bailiff: serving Streamable HTTP at http://%s/\n", ln.Addr())
		if err := proxy.ServeGatewayHTTP(ctx, opt, ln, ups, lp.httpOptions()); err != nil {
			return usageErr(err, "")
		}
		return nil
	}
	if err := proxy.RunGateway(ctx, opt, stdin, stdout, ups); err != nil {
		return usageErr(err, "")
	}
	return nil
}
