package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/engine"
	"bailiff/report"
)

func newPolicy(stdout io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:   "policy",
		Short: "Check and convert policy files",
		Long:  "policy lint finds rules that can never decide; policy import converts other gateways' policies.",
		Example: `  bailiff policy lint policy.yaml --tools mail-tools.json
  bailiff policy import --from mcp-bouncer bouncer.yaml -o policy.yaml`,
		Args: noArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErr(errors.New("policy needs a subcommand: lint or import"), "run 'bailiff policy --help' for usage")
		},
	}
	c.AddCommand(newPolicyLint(stdout), newPolicyImport(stdout))
	return c
}

type lintParams struct {
	tools   []string
	servers []string
	format  formatFlag
}

func newPolicyLint(stdout io.Writer) *cobra.Command {
	var p lintParams
	c := &cobra.Command{
		Use:   "lint POLICY",
		Short: "Find rules that can never match and contracts that cannot work",
		Long: `lint loads a policy and reports:
  shadowed-rule           a rule an earlier rule always matches first
  never-matches           a rule whose conditions contradict, or (with --tools)
                          whose tool glob matches no listed tool (with
                          --server, no tool of a server its server glob
                          matches)
  no-rule-for-server      (with --server) a server no rule allows or asks
                          for: every call to it will be denied
  unlisted-contract       (with --tools) a contract for a tool no server lists
  no-sink-params          an exfiltrating tool that names no sink_params
  write-without-prefixes  write_params with no allowed_path_prefixes
  self-published-unset    a sending tool, beside a tool that fetches pages, that
                          does not say what a site's own published address gets
  self-published-no-fetch on_self_published set, but no tool fetches
  first-party-loosens     a first_party entry naming every tool, or a tool that
                          fetches pages or lists search results
  first-party-no-source   on_first_party set, but no first_party source
  first-party-trusted     a first_party entry a trusted source already covers
  listing-fetches         lists: true on a tool that fetches pages
  not-destinations-glob   (with --tools) the destination-shaped arguments of the
                          listed tools a not_destinations glob takes out
  contract-overlap        a contract that applies to some tools instead of
                          another, dropping a control that one sets
                          (exfiltrating: true, sink_params, write_params,
                          max_calls, arg_patterns, a deny on_taint,
                          on_first_party or on_self_published,
                          not_destinations)
  glob-loosens            a glob contract with exfiltrating: false or
                          not_destinations, which any tool a server names to
                          match it gets

--tools takes a server's tools/list answer as JSON ({"tools": [...]});
repeat it for every server the policy covers. --server names the server
that lists them, as the gateway will name it: one --server names the
servers of every --tools, or give one --server per --tools, in the same
order. Exit 1 when there are findings.`,
		Example: `  bailiff policy lint policy.yaml
  bailiff policy lint policy.yaml --server filesystem --tools fs-tools.json
  bailiff policy lint policy.yaml --server fs --tools fs-tools.json --server mail --tools mail-tools.json`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if _, err := p.format.get(); err != nil {
				return err
			}
			return checkLintServers(p)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLint(cmd.InOrStdin(), stdout, cmd.ErrOrStderr(), p, args[0])
		},
	}
	c.Flags().StringArrayVar(&p.tools, "tools", nil, "a tools/list answer (JSON) of a server the policy covers (repeatable)")
	c.Flags().StringArrayVar(&p.servers, "server", nil, "the name of the server that lists --tools: once for all of them, or once per --tools in order (repeatable)")
	p.format.register(c)
	return c
}

func runLint(stdin io.Reader, stdout, stderr io.Writer, p lintParams, name string) error {
	data, err := readInput(stdin, name, kindPolicy)
	if err != nil {
		return err
	}
	var tools []engine.ListedTool
	for i, t := range p.tools {
		b, err := readInput(stdin, t, kindListing)
		if err != nil {
			return err
		}
		listed, err := engine.ListedTools(b)
		if err != nil {
			return usageErr(fmt.Errorf("%s: %v", t, err), "")
		}
		for j := range listed {
			listed[j].Server = lintServer(p.servers, i)
		}
		tools = append(tools, listed...)
	}
	if p.tools != nil && tools == nil {
		tools = []engine.ListedTool{}
	}
	pol, err := engine.Load(name, data)
	if err != nil {
		return usageErr(err, "")
	}
	found, err := pol.Lint(tools)
	if err != nil {
		return usageErr(err, "")
	}
	f, _ := p.format.get()
	var out bytes.Buffer
	if err := report.Lint(&out, f, found); err != nil {
		return err
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return err
	}
	if len(found) > 0 {
		return findings
	}
	if f == report.Table {
		// Standard output stays empty for a script; the person at the
		// terminal learns that lint ran, and over what.
		fmt.Fprintf(stderr, "bailiff: %s: no findings in %s\n", name, lintScope(pol, tools))
	}
	return nil
}

// checkLintServers refuses --server that cannot be paired with --tools.
func checkLintServers(p lintParams) error {
	const hint = "bailiff policy lint policy.yaml --server fs --tools fs-tools.json --server mail --tools mail-tools.json"
	switch {
	case len(p.servers) == 0:
		return nil
	case len(p.tools) == 0:
		return usageErr(errors.New("--server names the server that lists --tools: give its tools/list answer too"), "bailiff policy lint policy.yaml --server filesystem --tools fs-tools.json")
	case len(p.servers) > 1 && len(p.servers) != len(p.tools):
		return usageErr(fmt.Errorf("%d --server for %d --tools: give one for all, or one per --tools", len(p.servers), len(p.tools)), hint)
	}
	for _, s := range p.servers {
		// As run takes a name.
		if err := checkServerName("--server", s); err != nil {
			return err
		}
	}
	return nil
}

// lintServer is the server of the i-th --tools, or "" when not named.
func lintServer(servers []string, i int) string {
	switch len(servers) {
	case 0:
		return ""
	case 1:
		return servers[0]
	}
	return servers[i]
}

// lintScope says what a clean lint looked at: the rules and contracts,
// and the listed tools when there were any.
func lintScope(pol *engine.Policy, tools []engine.ListedTool) string {
	spec := pol.Spec()
	contracts := len(spec.Tools)
	for _, s := range spec.Servers {
		contracts += len(s)
	}
	scope := fmt.Sprintf("%s and %s", countOf(len(spec.Rules), "rule"), countOf(contracts, "contract"))
	if tools != nil {
		scope += fmt.Sprintf(", against %s", countOf(len(tools), "listed tool"))
	}
	var servers []string
	for _, t := range tools {
		if t.Server != "" && !slices.Contains(servers, t.Server) {
			servers = append(servers, t.Server)
		}
	}
	if len(servers) > 0 {
		noun := "server"
		if len(servers) > 1 {
			noun = "servers"
		}
		scope += " of " + noun + " " + strings.Join(servers, ", ")
	}
	return scope
}

type importParams struct {
	from   string
	out    string
	output output
}

func newPolicyImport(stdout io.Writer) *cobra.Command {
	var p importParams
	c := &cobra.Command{
		Use:   "import --from mcp-bouncer FILE [-o OUT]",
		Short: "Convert another gateway's policy into a bailiff policy",
		Long: `import reads an mcp-bouncer policy (tool names at the top level, each with
exfiltrating, sink_params, trusted_destinations, write_params,
allowed_path_prefixes, max_calls, arg_patterns) and writes the equivalent
bailiff policy: the same contracts, and one explicit, named allow-all rule,
since bouncer forwards every call its contracts do not stop. Review that
rule: bailiff's own default is to deny.

The policy goes to stdout, or to OUT (written whole or not at all).`,
		Example: `  bailiff policy import --from mcp-bouncer bouncer.yaml
  bailiff policy import --from mcp-bouncer bouncer.yaml -o policy.yaml`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			switch p.from {
			case "mcp-bouncer":
				return nil
			case "":
				return usageErr(errors.New("import needs --from"), "bailiff policy import --from mcp-bouncer FILE")
			}
			return usageErr(fmt.Errorf("cannot import from %q (known: mcp-bouncer)", p.from), "")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(cmd.InOrStdin(), stdout, p, args[0])
		},
	}
	c.Flags().StringVar(&p.from, "from", "", "the format of FILE: mcp-bouncer")
	completeValues(c, "from", "mcp-bouncer")
	c.Flags().StringVarP(&p.out, "output", "o", "", "write the policy to this file instead of stdout")
	p.output.register(c)
	return c
}

func runImport(stdin io.Reader, stdout io.Writer, p importParams, name string) error {
	data, err := readInput(stdin, name, kindBouncer)
	if err != nil {
		return err
	}
	if p.out != "-" {
		if err := p.output.check([]string{name}, p.out); err != nil {
			return err
		}
	}
	f, err := engine.ImportBouncer(name, data)
	if err != nil {
		return usageErr(err, "")
	}
	text, err := engine.MarshalFile(f, fmt.Sprintf("Imported from the mcp-bouncer policy %s by bailiff policy import.\n"+
		"Rule %s keeps bouncer's behaviour of forwarding every call its contracts\n"+
		"do not stop; narrow it to the tools you use. Unlike bouncer, bailiff asks a\n"+
		"human before sending to a destination that is neither trusted nor approved.", name, engine.BouncerAllowAll))
	if err != nil {
		return err
	}
	// What is written must load: check before anything reaches the user.
	if _, err := engine.Load(name+" (converted)", text); err != nil {
		return fmt.Errorf("converted policy does not load: %w", err)
	}
	if p.out != "" {
		p.output.stdout = stdout
		return p.output.write(p.out, text)
	}
	_, err = stdout.Write(text)
	return err
}
