package arch

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

type pkg struct {
	ImportPath string
	Imports    []string
}

// packages are the module's packages with what they import, as the go
// command sees them (test files left out: a test may reach anything).
func packages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "bailiff/...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var ps []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		// The benchmark generators are tools, not part of bailiff.
		if !strings.HasPrefix(p.ImportPath, "bailiff/bench/") {
			ps = append(ps, p)
		}
	}
	return ps
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

var arrow = regexp.MustCompile(`^\s*([\w/]+)\s*-->\s*([\w/]+)\s*$`)

// drawn are the arrows of the first mermaid block of docs/architecture.md.
func drawn(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(root(t), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var arrows []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```mermaid"):
			in = true
		case in && strings.HasPrefix(line, "```"):
			return arrows
		case in:
			if m := arrow.FindStringSubmatch(line); m != nil {
				arrows = append(arrows, m[1]+" --> "+m[2])
			}
		}
	}
	t.Fatal("docs/architecture.md has no closed mermaid block")
	return nil
}

// TestDependencyArrows: the picture in docs/architecture.md is exactly the
// module's import graph: an import it does not draw, or an arrow no code
// follows, fails.
func TestDependencyArrows(t *testing.T) {
	var real []string
	for _, p := range packages(t) {
		for _, imp := range p.Imports {
			if rest, ok := strings.CutPrefix(imp, "bailiff/"); ok {
				real = append(real, strings.TrimPrefix(p.ImportPath, "bailiff/")+" --> "+rest)
			}
		}
	}
	doc := drawn(t)
	slices.Sort(real)
	slices.Sort(doc)
	for _, a := range real {
		if !slices.Contains(doc, a) {
			t.Errorf("the code has %s, which docs/architecture.md does not draw", a)
		}
	}
	for _, a := range doc {
		if !slices.Contains(real, a) {
			t.Errorf("docs/architecture.md draws %s, which no code imports", a)
		}
	}
}

// TestLayers: the rules the picture exists to keep.
func TestLayers(t *testing.T) {
	for _, p := range packages(t) {
		from := strings.TrimPrefix(p.ImportPath, "bailiff/")
		for _, imp := range p.Imports {
			to, ours := strings.CutPrefix(imp, "bailiff/")
			switch {
			case ours && from != "cmd/bailiff" && (to == "proxy" || to == "cmd/bailiff"):
				t.Errorf("%s imports %s: nothing imports the gateway or the command", from, to)
			case ours && from == "engine":
				t.Errorf("engine imports %s: the engine stands alone", to)
			case ours && from == "chain" && to == "engine":
				t.Errorf("chain imports engine: the log knows nothing of decisions")
			case ours && from == "report" && to == "chain":
				t.Errorf("report imports chain: it renders the results it is given, and reads no log")
			case ours && from == "proxy" && to == "chain":
				t.Errorf("proxy imports chain: the gateway writes and reads records only through audit")
			case ours && from == "replay" && to != "engine" && !strings.HasPrefix(to, "internal/"):
				t.Errorf("replay imports %s: it is the trace format, and nothing else", to)
			}
		}
	}
}

// owners are the third-party modules only one package may use.
var owners = map[string]string{
	"github.com/spf13/cobra":               "cmd/bailiff",
	"github.com/schollz/progressbar/v3":    "cmd/bailiff",
	"github.com/modelcontextprotocol/":     "proxy internal/demo", // the demo's own server and agent
	"github.com/clipperhouse/displaywidth": "report",
	"github.com/olekukonko/tablewriter":    "report", // the reference its tables are tested against
	"github.com/yuin/goldmark":             "report",
	"github.com/coreos/go-oidc/":           "identity",
	"github.com/go-jose/go-jose/":          "identity",
	"golang.org/x/mod/sumdb/":              "chain",
	"github.com/segmentio/encoding/json":   "chain",
	"golang.org/x/net/idna":                "engine",
	"golang.org/x/time/rate":               "proxy", // per-address bound on new HTTP sessions
	"golang.org/x/net/publicsuffix":        "engine",
	"golang.org/x/text/cases":              "engine",
	"gopkg.in/yaml.v3":                     "engine cmd/bailiff",
	"golang.org/x/text/unicode/norm":       "engine proxy",
	"golang.org/x/term":                    "cmd/bailiff",
	"golang.org/x/sync/semaphore":          "verify",
	"modernc.org/sqlite":                   "state",                 // the operating state, one SQLite file
	"github.com/jackc/pgx/v5":              "state internal/pgtest", // the same state in PostgreSQL, for replicas
	"github.com/prometheus/client_golang":  "telemetry",             // the metrics a gateway serves
	"go.opentelemetry.io/otel":             "telemetry",             // the traces it sends
}

// TestDependencyOwners: each dependency stays in the package whose job
// it serves, and a new one is a decision written down here.
func TestDependencyOwners(t *testing.T) {
	for _, p := range packages(t) {
		from := strings.TrimPrefix(p.ImportPath, "bailiff/")
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "bailiff/") || !strings.Contains(strings.Split(imp, "/")[0], ".") {
				continue
			}
			who, known := owner(imp)
			switch {
			case !known:
				t.Errorf("%s imports %s, a dependency no package owns here", from, imp)
			case !slices.Contains(strings.Fields(who), from):
				t.Errorf("%s imports %s, which only %s may use", from, imp, who)
			}
		}
	}
}

// owner is who may import imp, by the owners entry that prefixes it.
func owner(imp string) (who string, known bool) {
	for prefix, w := range owners {
		if strings.HasPrefix(imp, prefix) {
			return w, true
		}
	}
	return "", false
}

// TestOneDriver: audit's driver is the only code that asks the engine
// for a decision or an answer; every other package drives a session
// through it, so no driver can decide under rules of its own.
func TestOneDriver(t *testing.T) {
	forbidLines(t, regexp.MustCompile(`\bengine\.(Decide|Answer)\(`), "calls the engine directly: drive the session through audit",
		func(rel string) bool { return !strings.HasPrefix(rel, "engine/") && !strings.HasPrefix(rel, "audit/") })
}

// TestReportRenders: report renders what it is given. The policy and the
// tool listings reach it loaded and parsed, so it cannot read a file
// another way than every other command does.
func TestReportRenders(t *testing.T) {
	forbidLines(t, regexp.MustCompile(`\bengine\.(Load|ListedTools|ParseTool|ToolFromValue|DecodeJSON)\(`), "loads or parses a policy or a listing: give report what is loaded",
		func(rel string) bool { return strings.HasPrefix(rel, "report/") })
}

// forbidLines fails on every line of the non-test Go files in scope that
// matches pattern.
func forbidLines(t *testing.T, pattern *regexp.Regexp, why string, inScope func(rel string) bool) {
	t.Helper()
	err := filepath.WalkDir(root(t), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root(t), path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() || !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || !inScope(rel) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, text := range strings.Split(string(data), "\n") {
			if pattern.MatchString(text) {
				t.Errorf("%s:%d %s", rel, i+1, why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSentinelsStandAlone: a sentinel error's text is read alone (in a
// log, a %v, a test's failure), so it must say what went wrong by
// itself, not end a sentence whose subject only its caller knows. An
// error type that names the file phrases the sentence.
func TestSentinelsStandAlone(t *testing.T) {
	sentinel := regexp.MustCompile(`\b[Ee]rr[A-Z]\w* *= *errors\.New\("((is|are|was|has) [^"]*)"\)`)
	forbidLines(t, sentinel, "declares a sentinel error whose text is a sentence fragment", func(string) bool { return true })
}
