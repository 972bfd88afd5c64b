package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"bailiff/chain"
	"bailiff/engine"
)

// Exit codes: 0 ok, 1 a finding, 2 usage or I/O error.
const (
	exitOK      = 0
	exitFinding = 1
	exitUsage   = 2
)

// ExitError carries an exit code, and optionally a message and a hint, out
// of a command.
type ExitError struct {
	Code int
	Err  error
	Hint string
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

// The exit codes are decided here, and nowhere else: a command says what
// kind of failure it has, and these say what that means to a script.

// usageErr is input that could not be used: exit 2.
func usageErr(err error, hint string) error { return &ExitError{Code: exitUsage, Err: err, Hint: hint} }

// findingErr is a result that is a finding (a log that fails, a gate
// that trips): exit 1.
func findingErr(err error, hint string) error {
	return &ExitError{Code: exitFinding, Err: err, Hint: hint}
}

// readLogErr is how reading log name ends on err: a log that fails
// integrity is a finding, with hint; anything else is input that could
// not be read.
func readLogErr(name string, err error, hint string) error {
	var ve *chain.VerifyError
	if errors.As(err, &ve) {
		return findingErr(fmt.Errorf("%s: %v", name, ve), hint)
	}
	return usageErr(fmt.Errorf("cannot read %s: %v", name, err), "")
}

// compareErr is how a comparison ends on err: a log verified in the pass
// that compares it fails with verify's own error, hint and all.
func compareErr(err error) error {
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	return usageErr(err, "")
}

// findings ends a command that reported findings on stdout.
var findings = &ExitError{Code: exitFinding}

// run is the whole program, callable in-process by tests: stdin is what
// "-" reads and what run and gateway serve the client on (nil reads as
// empty).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	// A panic is a bug, and it must not read as a result: it ends the
	// command with a message and exit 2, never a partial answer and 0.
	// Workers in other goroutines recover on their own and return errors.
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "bailiff: error: internal error: %v\n", r)
			fmt.Fprintf(stderr, "bailiff: hint: this is a bug in bailiff; the output above, if any, is incomplete\n")
			code = exitUsage
		}
	}()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var ee *ExitError
	if !errors.As(err, &ee) {
		// cobra's own errors: unknown commands and argument counts, of
		// the command cobra was running.
		ee = &ExitError{Code: exitUsage, Err: err, Hint: helpHint(cmd)}
		// cobra's "Did you mean this?" block is several lines; an
		// error is one, and the suggestion is its hint.
		if rest, ok := strings.CutPrefix(err.Error(), "unknown command "); ok && cmd != nil {
			if typed, err := strconv.QuotedPrefix(rest); err == nil {
				typed, _ = strconv.Unquote(typed)
				if s := cmd.SuggestionsFor(typed); len(s) > 0 {
					ee.Hint = "did you mean " + strings.Join(s, " or ") + "?"
				}
			}
		}
	}
	if ee.Err != nil {
		fmt.Fprintf(stderr, "bailiff: error: %s\n", strings.TrimSuffix(ee.Err.Error(), "."))
	}
	if ee.Hint != "" {
		fmt.Fprintf(stderr, "bailiff: hint: %s\n", ee.Hint)
	}
	return ee.Code
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "bailiff",
		Short: "A deterministic gateway for MCP tool calls, and the tools to audit it",
		Long: `bailiff decides every MCP tools/call with a pure policy engine before the
real server is contacted, and reads its decisions back offline.

Start with the demo, which runs a hijacked agent through the real gateway,
shows what reached the disk, and checks the audit log offline:

  bailiff demo

Then test your own policy against a hand-written session trace:

  bailiff replay --policy policy.yaml session.jsonl

Write the audit log a session leaves, and prove every verdict in it:

  bailiff record --policy policy.yaml --clock 2026-12-01T09:00:00Z session.jsonl -o audit.jsonl
  bailiff verify audit.jsonl
  bailiff calls --verdict deny audit.jsonl

Put a real MCP server behind it:

  bailiff run --policy policy.yaml --server filesystem -- npx -y @modelcontextprotocol/server-filesystem /srv

(--server is the name the policy's rules select; without it the name is
the package's, here "filesystem", never a directory the server is given.)`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Suggestions are made in run, as a one-line hint.
		DisableSuggestions:         true,
		SuggestionsMinimumDistance: 2,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetIn(stdin)
	root.Version = version()
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// A negative number reads to the flag parser as a shorthand
		// flag ("unknown shorthand flag: '1' in -1"); for prove it is
		// a SEQ, and the error says what a SEQ is.
		if _, arg, ok := strings.Cut(err.Error(), "unknown shorthand flag: "); ok && c.Name() == "prove" {
			if i := strings.LastIndex(arg, " in -"); i >= 0 {
				if n := arg[i+len(" in "):]; strings.Trim(n[1:], "0123456789") == "" && len(n) > 1 {
					return usageErr(fmt.Errorf("SEQ %q is not a record number", n), "SEQ is a record number of 0 or more: bailiff prove LOG SEQ")
				}
			}
		}
		return usageErr(err, helpHint(c))
	})
	root.AddCommand(newReplay(stdout), newPolicy(stdout), newDemo(stdout, stderr), newDemoServer(stdin, stdout),
		newRecord(stdout, stderr), newVerify(stdout, stderr), newKeygen(stderr), newCheckpoint(stdout, stderr),
		newProve(stdout, stderr), newVerifyProof(stdout), newRepair(stderr), newPurge(stderr),
		newRun(stdin, stdout, stderr), newGateway(stdin, stderr), newInit(stdin, stdout), newShadow(stdout, stderr), newAblate(stdout, stderr), newReport(stderr), newApprovals(stdout), newAnswer(stdout, "approve"), newAnswer(stdout, "decline"),
		newCalls(stdout, stderr), newWhoami(stdin, stdout), newExport(stdout, stderr))
	// cobra adds help and completion when the root runs; made here, they
	// get examples like every other command.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Example = "  bailiff help verify\n  bailiff help policy lint"
		case "completion":
			completionCmd(c)
		}
	}
	return root
}

// completionCmd gives cobra's completion command examples, and makes a
// shell it has no script for a usage error: cobra would print the help
// and exit 0, as if it had written a script.
func completionCmd(c *cobra.Command) {
	c.Example = "  bailiff completion bash > /etc/bash_completion.d/bailiff\n  bailiff completion zsh > \"${fpath[1]}/_bailiff\"\n  bailiff completion bash --help"
	var shells []string
	for _, sh := range c.Commands() {
		sh.Example = completionExamples[sh.Name()]
		shells = append(shells, sh.Name())
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		what := "name a shell"
		if len(args) > 0 {
			what = fmt.Sprintf("no completion for shell %q", args[0])
		}
		return usageErr(fmt.Errorf("%s: want %s", what, strings.Join(shells, ", ")), "bailiff completion --help")
	}
}

// completionExamples load each shell's script, as its help says.
var completionExamples = map[string]string{
	"bash":       "  source <(bailiff completion bash)\n  bailiff completion bash > /etc/bash_completion.d/bailiff",
	"zsh":        "  source <(bailiff completion zsh)\n  bailiff completion zsh > \"${fpath[1]}/_bailiff\"",
	"fish":       "  bailiff completion fish | source\n  bailiff completion fish > ~/.config/fish/completions/bailiff.fish",
	"powershell": "  bailiff completion powershell | Out-String | Invoke-Expression",
}

// helpHint points at the help of the command that was run.
func helpHint(c *cobra.Command) string {
	if c == nil {
		c = &cobra.Command{Use: "bailiff"}
	}
	return fmt.Sprintf("run '%s --help' for usage", c.CommandPath())
}

// version is what --version prints: the build, and the versions an
// answer depends on, so a reader can tell which engine and formats an
// output came from.
func version() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("bailiff %s\nengine: %s\naudit format: %d\npolicy format: %d\n", v, engine.Version, chain.Version, engine.FormatVersion)
}

// formatFlag is the --format flag shared by the offline commands.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// writeOutput writes data to name atomically (see writeOutputFrom).
func writeOutput(name string, data []byte) error {
	return writeOutputFrom(name, func(w io.Writer) error {
		if _, err := w.Write(data); err != nil {
			return usageErr(fmt.Errorf("cannot write %s: %v", name, err), "")
		}
		return nil
	})
}

// writeOutputFrom writes name atomically from fill, replacing it if it
// exists: for a command whose job is to rewrite a file in place (init).
// Outputs a user names go through output instead.
func writeOutputFrom(name string, fill func(w io.Writer) error) error {
	return writeAtomic(name, false, fill)
}

// writeAtomic writes name from fill: a temp file in the same directory,
// synced, then renamed, so a failed command leaves no partial output and
// nothing has to fit in memory. With noClobber the temp file is linked,
// not renamed: that fails rather than replace a file that appeared since
// the caller looked.
func writeAtomic(name string, noClobber bool, fill func(w io.Writer) error) error {
	if err := notSpecial(name); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp*")
	if err != nil {
		return usageErr(fmt.Errorf("cannot write %s: %v", name, unwrapPath(err)), "")
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return usageErr(fmt.Errorf("cannot write %s: %v", name, err), "")
	}
	if err := tmp.Close(); err != nil {
		return usageErr(fmt.Errorf("cannot write %s: %v", name, err), "")
	}
	if noClobber {
		err = os.Link(tmp.Name(), name)
		if errors.Is(err, fs.ErrExist) {
			return usageErr(fmt.Errorf("%s exists: it is replaced only with --force", name), "")
		}
		if err != nil {
			// A file system without hard links: check, then rename.
			if _, serr := os.Lstat(name); serr == nil {
				return usageErr(fmt.Errorf("%s exists: it is replaced only with --force", name), "")
			}
			err = os.Rename(tmp.Name(), name)
		}
	} else if err = notSpecial(name); err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	if err != nil {
		return usageErr(fmt.Errorf("cannot write %s: %v", name, unwrapPath(err)), "")
	}
	return nil
}

// notSpecial refuses to replace what is not a regular file (or a
// symlink, which a rename replaces, not its target): --force over
// /dev/null or a FIFO would put a regular file where a device was.
func notSpecial(name string) error {
	fi, err := os.Lstat(name)
	if err != nil || fi.Mode().IsRegular() || fi.Mode()&os.ModeSymlink != 0 {
		return nil
	}
	return usageErr(fmt.Errorf("%s is not a regular file (%s): bailiff replaces only regular files", name, fi.Mode().Type()), "name a file, or - for standard output")
}

// Argument counts, said the way the command's usage line says them
// rather than cobra's "accepts 2 arg(s), received 4".
func noArgs() cobra.PositionalArgs { return argCount(0, 0) }

func exactArgs(n int) cobra.PositionalArgs { return argCount(n, n) }

func minArgs(n int) cobra.PositionalArgs { return argCount(n, -1) }

func argCount(lo, hi int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) >= lo && (hi < 0 || len(args) <= hi) {
			return nil
		}
		given := "none"
		if len(args) > 0 {
			given = fmt.Sprintf("%d (%s)", len(args), strings.Join(quoted(args), " "))
		}
		var want string
		switch {
		case hi == 0:
			want = "takes no arguments"
		case lo == hi:
			want = "takes " + countOf(lo, "argument")
		default:
			want = "needs at least " + countOf(lo, "argument")
		}
		parent := ""
		if c.HasParent() {
			parent = c.Parent().CommandPath() + " "
		}
		return usageErr(fmt.Errorf("%s %s, but was given %s", c.CommandPath(), want, given),
			fmt.Sprintf("usage: %s%s (run '%s --help' for more)", parent, c.Use, c.CommandPath()))
	}
}

// quoted shows the first few arguments on the one line an error has.
func quoted(args []string) []string {
	var out []string
	for i, a := range args {
		if i == 3 {
			return append(out, "…")
		}
		if len(a) > 60 {
			a = a[:60] + "…"
		}
		out = append(out, strconv.Quote(a))
	}
	return out
}
