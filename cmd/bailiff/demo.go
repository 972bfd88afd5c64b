package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"bailiff/internal/demo"
	"bailiff/report"
)

func newDemo(stdout, stderr io.Writer) *cobra.Command {
	var format formatFlag
	var dir string
	c := &cobra.Command{
		Use:   "demo [-o DIR]",
		Short: "Run a hijacked agent through the real gateway, then check the log offline",
		Long: `demo tells bailiff's story with nothing to configure. It starts the real
bailiff run in front of a small MCP server built into this binary, whose
tools really send mail (to an outbox file) and really write and delete
files (in a workspace folder). A scripted agent does its user's task, and
also what a poisoned email in the inbox tells it to: mail a report to the
attacker, write a shell hook outside the workspace, delete every file.

Then demo reads the disk back to show what reached it, and runs the
offline toolkit on the audit log the gateway wrote: verify, verify of a
tampered copy, shadow of a stricter policy, ablate, and the review pack
in Markdown and HTML. Everything goes to DIR (default: a new temporary
directory), and the transcript says where.

Exit 0 when every check holds; 1 when one does not (the transcript says
which); 2 when the demo cannot run.`,
		Example: `  bailiff demo
  bailiff demo -o demo-out
  bailiff demo --format json`,
		Args: noArgs(),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			f, err := format.get()
			if err == nil && f == report.Markdown {
				return usageErr(errors.New("demo prints a transcript (table) or a summary (json), not markdown"), "bailiff demo --format json")
			}
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f, _ := format.get()
			return runDemo(cmd.Context(), stdout, stderr, dir, f)
		},
	}
	c.Flags().StringVarP(&dir, "output", "o", "", "directory to write everything to: new or empty (default: a new temporary directory)")
	format.register(c)
	c.Flags().Lookup("format").Usage = "output format: table (a transcript) or json (a summary for a script)"
	return c
}

// through it.
func demoDir(dir string) (string, error) {
	if dir == "" {
		dir = os.TempDir()
		if problem, err := sharedAncestor(dir); err != nil || problem != "" {
			return "", usageErr(fmt.Errorf("the temporary directory %s cannot hold the demo: %s", dir, orText(problem, err)), "bailiff demo -o DIR, in a directory of your own")
		}
		return os.MkdirTemp(dir, "bailiff-demo-")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return "", usageErr(fmt.Errorf("cannot make %s: %v", dir, unwrapPath(err)), "give a new or empty directory")
	}
	// Whoever can rename an ancestor can swap the directory for a
	// symlink after every check below, and the demo would write
	// through it.
	if problem, err := sharedAncestor(filepath.Dir(abs)); err != nil || problem != "" {
		return "", usageErr(fmt.Errorf("cannot use %s: %s: someone else could swap it for a symlink", dir, orText(problem, err)), "bailiff demo -o DIR, in a directory of your own")
	}
	if err := os.Mkdir(abs, 0o700); err == nil {
		return abs, nil
	} else if !errors.Is(err, os.ErrExist) {
		return "", usageErr(fmt.Errorf("cannot make %s: %v", dir, unwrapPath(err)), "give a new or empty directory")
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return "", usageErr(fmt.Errorf("cannot use %s: %v", dir, unwrapPath(err)), "give a new or empty directory")
	}
	if !fi.IsDir() {
		return "", usageErr(fmt.Errorf("%s is not a directory", dir), "give a new or empty directory")
	}
	if problem := sharedDir(fi); problem != "" {
		return "", usageErr(fmt.Errorf("%s %s: someone else could plant a symlink where the demo writes", dir, problem), "bailiff demo -o NEW-DIR")
	}
	entries, err := os.ReadDir(abs)
	switch {
	case err != nil:
		return "", usageErr(fmt.Errorf("cannot use %s: %v", dir, unwrapPath(err)), "give a new or empty directory")
	case len(entries) > 0:
		return "", usageErr(fmt.Errorf("%s is not empty: the demo writes only into a new or empty directory", dir), "bailiff demo -o NEW-DIR")
	}
	return abs, nil
}

func orText(s string, err error) string {
	if err != nil {
		return unwrapPath(err).Error()
	}
	return s
}

// demoPolicy is the policy the gateway enforces; a test swaps in one that
// stops nothing, to see every check of the disk fail.
var demoPolicy = demo.Policy

// runEnv are the variables bailiff run takes its defaults from.
var runEnv = []string{"BAILIFF_POLICY", "BAILIFF_AUDIT", "BAILIFF_APPROVER_KEYS", "BAILIFF_SERVER", "BAILIFF_PRINCIPAL", "BAILIFF_URL"}

// demoRun is one demo: its files, and what each stage found.
type demoRun struct {
	root  string      // everything the demo writes
	l     demo.Layout // the server's files, under root: bailiff run refuses a log where the server may write
	stage *demoProgress
	sum   demoSummary
}

func (d *demoRun) path(name string) string { return filepath.Join(d.root, name) }

func runDemo(ctx context.Context, stdout, stderr io.Writer, dir string, f report.Format) error {
	if ctx == nil {
		ctx = context.Background()
	}
	dir, err := demoDir(dir)
	if err != nil {
		return err
	}
	d := &demoRun{root: dir, l: demo.Layout{Dir: filepath.Join(dir, "office")}, stage: newDemoProgress(stderr, 8)}
	d.sum.Dir = dir
	defer d.stage.Done()
	if err := d.prepare(); err != nil {
		return err
	}
	if err := d.session(ctx); err != nil {
		return err
	}
	for _, step := range []func() error{d.disk, d.verify, d.tamper, d.shadow, d.ablate, d.report} {
		if err := step(); err != nil {
			return err
		}
	}
	d.stage.Done()
	d.sum.OK = d.sum.ok()
	var out []byte
	switch f {
	case report.JSON:
		if out, err = json.MarshalIndent(d.sum, "", "  "); err != nil {
			return err
		}
		out = append(out, '\n')
	default:
		out = []byte(d.sum.transcript())
	}
	if _, err := stdout.Write(out); err != nil {
		return err
	}
	if !d.sum.OK {
		return findingErr(errors.New("a demo check failed: see the transcript"), "")
	}
	return nil
}

// prepare writes the workspace, inbox and both policies.
func (d *demoRun) prepare() error {
	d.stage.Next("preparing " + d.root)
	if err := demo.Setup(d.l); err != nil {
		return err
	}
	if err := os.WriteFile(d.path("policy.yaml"), []byte(demoPolicy(d.l)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(d.path("stricter.yaml"), []byte(demo.Stricter(d.l)), 0o644)
}

// session runs the agent through the real gateway: bailiff run, as a
// process of its own, in front of the demo server, as a process of its
// own, with an MCP client that approves what its human would.
func (d *demoRun) session(ctx context.Context) error {
	d.stage.Next("running the agent through bailiff run")
	self, err := executable()
	if err != nil {
		return err
	}
	gw := exec.Command(self, "run", "--policy", d.path("policy.yaml"), "--audit", d.path("audit.jsonl"),
		"--server", "office", "--session", demo.Session, "--principal", "ana",
		"--", self, "demo-server", "--dir", d.l.Dir)
	// The user's own defaults for run (a policy, a URL, approver keys)
	// are not the demo's: every setting it needs is a flag.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains(runEnv, name) {
			gw.Env = append(gw.Env, kv)
		}
	}
	var gwErr strings.Builder
	gw.Stderr = &gwErr
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	steps := demo.Script(d.l)
	answers, err := demo.RunAgent(ctx, gw, steps)
	if err != nil {
		return fmt.Errorf("the agent's session: %v\n%s", err, gwErr.String())
	}
	log, err := os.Open(d.path("audit.jsonl"))
	if err != nil {
		return err
	}
	defer log.Close()
	decisions, err := demo.Decisions(log)
	if err != nil {
		return fmt.Errorf("reading the gateway's log: %v", err)
	}
	if len(decisions) != len(steps) {
		return fmt.Errorf("the gateway recorded %d calls for the agent's %d", len(decisions), len(steps))
	}
	for i, st := range steps {
		if decisions[i].Tool != st.Tool {
			return fmt.Errorf("the gateway recorded call %d as %s, and the agent called %s", i+1, decisions[i].Tool, st.Tool)
		}
		d.sum.Calls = append(d.sum.Calls, demoCall{Step: i + 1, Says: st.Says, Attack: st.Attack, Decision: decisions[i], Refused: answers[i].Refused, wantAsk: st.Ask})
	}
	return nil
}

// disk reads back what the server did.
func (d *demoRun) disk() error {
	d.stage.Next("reading the disk back")
	checks, err := demo.CheckDisk(d.l)
	d.sum.Disk = checks
	return err
}
