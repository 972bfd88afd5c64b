package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// FormatVersion is the only policy file format this engine reads. A file
// without `version: 1` is refused rather than guessed at.
const FormatVersion = 1

// defaultRuleID names the decision of a call that no rule matched. It can
// never be written as a rule id, so it cannot be confused with one.
const defaultRuleID = "<implicit-default-deny>"

// defaultApprovalTTL is how long a grant stays usable when neither the grant
// nor the policy says otherwise.
const defaultApprovalTTL = 15 * time.Minute

// File is a policy as written in YAML. Load turns it into a Policy; the
// canonical form of a Policy is a File again, with packs expanded.
type File struct {
	Version        int                  `yaml:"version" json:"version"`
	Name           string               `yaml:"name,omitempty" json:"name,omitempty"`
	Packs          []string             `yaml:"packs,omitempty" json:"packs,omitempty"`
	Rules          []RuleSpec           `yaml:"rules" json:"rules"`
	Tools          map[string]*Contract `yaml:"tools,omitempty" json:"tools,omitempty"`
	TrustedSources []SourceSpec         `yaml:"trusted_sources,omitempty" json:"trusted_sources,omitempty"`
	// FirstParty names tool output that still taints, at the first-party
	// tier: the user's own records, whose free-text fields a stranger
	// may have written.
	FirstParty []SourceSpec  `yaml:"first_party,omitempty" json:"first_party,omitempty"`
	Redact     []string      `yaml:"redact,omitempty" json:"redact,omitempty"`
	Approval   *ApprovalSpec `yaml:"approval,omitempty" json:"approval,omitempty"`

	// Destinations are named lists of trusted_destinations entries that
	// any contract includes with "list:NAME".
	Destinations map[string][]string `yaml:"destinations,omitempty" json:"destinations,omitempty"`

	// Servers holds contracts for one server's tools, which win over the
	// top-level tools for that server.
	Servers map[string]map[string]*Contract `yaml:"servers,omitempty" json:"servers,omitempty"`

	// Tenants gives each tenant a ceiling on what its calls may cost
	// per window, across all its sessions; "*" is every tenant not named.
	Tenants map[string]*TenantSpec `yaml:"tenants,omitempty" json:"tenants,omitempty"`
}

// RuleSpec is one firewall rule. Tool and Server are globs; every predicate
// in When must hold for the rule to match.
type RuleSpec struct {
	ID     string      `yaml:"id" json:"id"`
	Server string      `yaml:"server,omitempty" json:"server,omitempty"`
	Tool   string      `yaml:"tool" json:"tool"`
	Scopes []string    `yaml:"scopes,omitempty" json:"scopes,omitempty"`
	When   []Predicate `yaml:"when,omitempty" json:"when,omitempty"`
	Action string      `yaml:"action" json:"action"`
	Reason string      `yaml:"reason,omitempty" json:"reason,omitempty"`
	// Rate limits the calls this rule lets through ("10/m"), counted
	// per principal, or per tenant with RateBy "tenant".
	Rate   string `yaml:"rate,omitempty" json:"rate,omitempty"`
	RateBy string `yaml:"rate_by,omitempty" json:"rate_by,omitempty"`
}

// Predicate tests the argument at path Arg with exactly one operator.
type Predicate struct {
	Arg    string   `yaml:"arg" json:"arg"`
	Equals *Scalar  `yaml:"equals,omitempty" json:"equals,omitempty"`
	In     []Scalar `yaml:"in,omitempty" json:"in,omitempty"`
	Regex  *string  `yaml:"regex,omitempty" json:"regex,omitempty"`
	Prefix *string  `yaml:"prefix,omitempty" json:"prefix,omitempty"`
	Glob   *string  `yaml:"glob,omitempty" json:"glob,omitempty"`
	Exists *bool    `yaml:"exists,omitempty" json:"exists,omitempty"`
	Gt     *float64 `yaml:"gt,omitempty" json:"gt,omitempty"`
	Gte    *float64 `yaml:"gte,omitempty" json:"gte,omitempty"`
	Lt     *float64 `yaml:"lt,omitempty" json:"lt,omitempty"`
	Lte    *float64 `yaml:"lte,omitempty" json:"lte,omitempty"`
}

// Contract holds the per-tool constraints checked after a rule allowed (or
// asked for) a call. The keys are mcp-bouncer's, so its policies port over.
type Contract struct {
	Exfiltrating        *bool             `yaml:"exfiltrating,omitempty" json:"exfiltrating,omitempty"`
	SinkParams          []string          `yaml:"sink_params,omitempty" json:"sink_params,omitempty"`
	TrustedDestinations []string          `yaml:"trusted_destinations,omitempty" json:"trusted_destinations,omitempty"`
	OnTaint             string            `yaml:"on_taint,omitempty" json:"on_taint,omitempty"`
	WriteParams         []string          `yaml:"write_params,omitempty" json:"write_params,omitempty"`
	AllowedPathPrefixes []string          `yaml:"allowed_path_prefixes,omitempty" json:"allowed_path_prefixes,omitempty"`
	MaxCalls            *int              `yaml:"max_calls,omitempty" json:"max_calls,omitempty"`
	ArgPatterns         map[string]string `yaml:"arg_patterns,omitempty" json:"arg_patterns,omitempty"`
	// Fetches names the argument holding the URL a fetch tool reads: its
	// output's origin is that URL's registrable domain.
	Fetches string `yaml:"fetches,omitempty" json:"fetches,omitempty"`
	// OnSelfPublished is the verdict for a tainted destination that only
	// its own site published (deny or ask; on_taint's when unset).
	OnSelfPublished string `yaml:"on_self_published,omitempty" json:"on_self_published,omitempty"`
	// OnFirstParty is the verdict for a tainted destination that only
	// first-party output holds (deny or ask; on_taint's when unset).
	OnFirstParty string `yaml:"on_first_party,omitempty" json:"on_first_party,omitempty"`
	// Lists marks a search or index tool: URLs its output holds point the
	// agent to a site, and do not count against the site's own page.
	Lists bool `yaml:"lists,omitempty" json:"lists,omitempty"`
	// NotDestinations are argument paths that are payload, not where
	// data goes, though their names look like destinations.
	NotDestinations []string `yaml:"not_destinations,omitempty" json:"not_destinations,omitempty"`
	// Cost is what a forwarded call spends of its tenant's ceiling
	// (default 1).
	Cost *int `yaml:"cost,omitempty" json:"cost,omitempty"`
	// Rate limits the calls this contract lets through ("10/m"),
	// counted per principal, or per tenant with RateBy "tenant".
	Rate   string `yaml:"rate,omitempty" json:"rate,omitempty"`
	RateBy string `yaml:"rate_by,omitempty" json:"rate_by,omitempty"`
}

// SourceSpec names tool output that does not taint destinations, such as
// the user's own address book. Both fields are globs.
type SourceSpec struct {
	Server string `yaml:"server,omitempty" json:"server,omitempty"`
	Tool   string `yaml:"tool" json:"tool"`
}

// ApprovalSpec tunes human grants.
type ApprovalSpec struct {
	TTL string `yaml:"ttl,omitempty" json:"ttl,omitempty"`
}

// Scalar is a YAML/JSON scalar used as a comparison value: a string, a
// number, a boolean or null. Lists and maps are refused at load time.
type Scalar struct {
	V any // string, float64, bool or nil
}

// UnmarshalYAML accepts scalars only, so `equals: [a, b]` is an error rather
// than a comparison that can never hold.
func (s *Scalar) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: a comparison value must be a scalar", n.Line)}}
	}
	switch n.Tag {
	case "!!null":
		s.V = nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return err
		}
		s.V = b
	case "!!int", "!!float":
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil && (errors.Is(err, strconv.ErrRange) || strings.Contains(strings.ToLower(n.Value), ".inf") || strings.Contains(strings.ToLower(n.Value), ".nan")) {
			f = math.NaN()
		} else if err != nil {
			var i int64
			if err2 := n.Decode(&i); err2 != nil {
				return err
			}
			f = float64(i)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s is not a finite number", n.Line, n.Value)}}
		}
		if f == 0 {
			f = 0 // not -0, which the canonical form would keep apart from 0
		}
		s.V = f
	default:
		s.V = n.Value
	}
	return nil
}

// MarshalJSON writes the scalar as its plain JSON value.
func (s Scalar) MarshalJSON() ([]byte, error) { return json.Marshal(s.V) }

// MarshalYAML writes the scalar as its plain value.
func (s Scalar) MarshalYAML() (any, error) { return s.V, nil }

// LoadError is a policy that cannot be loaded: where, and why.
type LoadError struct {
	File   string
	Line   int // 0 when no line applies
	Reason string
}

func (e *LoadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Reason)
}

// Load parses and compiles a policy file. name is used in error messages
// only. Unknown keys, wrong types, bad regexes, relative path prefixes and
// unknown packs all stop loading with the file, line and a plain reason.
func Load(name string, data []byte) (*Policy, error) {
	f, root, err := decodeFile(name, data)
	if err != nil {
		return nil, err
	}
	p, err := compile(f, name, root)
	if err != nil {
		return nil, err
	}
	// An audit log embeds the canonical form, and verify decides with
	// what that form loads as: it must be this very policy. (Loading the
	// canonical form itself needs no second look.)
	if !bytes.Equal(bytes.TrimSpace(data), p.canonical) {
		cf, croot, err := decodeFile(name, p.canonical)
		var again *Policy
		if err == nil {
			again, err = compile(cf, name, croot)
		}
		if err != nil || again.version != p.version {
			reason := "its canonical form loads as another policy"
			if err != nil {
				reason = "its canonical form does not load: " + err.Error()
			}
			return nil, &LoadError{File: name, Reason: "the policy cannot be recorded: " + reason + " (write it another way, and report this)"}
		}
	}
	p.name, p.source = name, bytes.Clone(data)
	return p, nil
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)
var notFound = regexp.MustCompile(`^field (\S+) not found in type \S+$`)

func decodeFile(name string, data []byte) (*File, *yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, yamlError(name, nil, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, nil, &LoadError{File: name, Reason: "empty policy"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, nil, yamlError(name, &root, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, nil, &LoadError{File: name, Line: extra.Line, Reason: "more than one YAML document"}
	}
	if e := fraction(&root); e != nil {
		e.File = name
		return nil, nil, e
	}
	if n := nullInList(&root); n != nil {
		return nil, nil, &LoadError{File: name, Line: n.Line, Reason: "an in list holds a null (~), which is no comparison value; test a missing argument with exists: false"}
	}
	return &f, &root, nil
}

// deref follows an alias to the node it names (`*n` for `&n ~`).
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 64; i++ {
		n = n.Alias
	}
	return n
}

// nullInList finds a null in an `in` list. The decoder drops it without
// a word, so `in: [~, 1]` would load as `in: [1]`, not what was written.
func nullInList(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], deref(n.Content[i+1])
			if k.Value == "in" && v.Kind == yaml.SequenceNode {
				for _, e := range v.Content {
					if d := deref(e); d.Kind == yaml.ScalarNode && d.Tag == "!!null" {
						return e
					}
				}
			}
		}
	}
	for _, c := range n.Content {
		if found := nullInList(c); found != nil {
			return found
		}
	}
	return nil
}

// Canonical returns the canonical form of the policy: the file with packs
// expanded, as JSON with fields in a fixed order and map keys sorted. It is
// valid policy YAML, and loading it gives a policy with the same canonical
// form, so an audit log can carry the policy it was decided under.
func (p *Policy) Canonical() []byte { return p.canonical }

// Version is the SHA-256 of the canonical form, as "sha256:<hex>".
func (p *Policy) Version() string { return p.version }

// Spec returns a copy of the expanded policy file.
func (p *Policy) Spec() *File {
	var f File
	// The canonical bytes were produced from a File; decoding them cannot fail.
	_ = json.Unmarshal(p.canonical, &f)
	return &f
}

// canonicalize fails rather than return a version of bytes that do not
// hold the policy: an empty form would hash to the same version for every
// policy that failed to encode.
func canonicalize(f *File) ([]byte, string, error) {
	c := *f
	c.Packs = nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		return nil, "", fmt.Errorf("the policy has no canonical form: %v", err)
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	sum := sha256.Sum256(b)
	return b, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// UnmarshalJSON lets Spec decode a Scalar from canonical JSON.
func (s *Scalar) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v.(type) {
	case nil, string, float64, bool:
		s.V = v
		return nil
	}
	return errors.New("a comparison value must be a scalar")
}

func validAction(a string) bool { return a == "allow" || a == "deny" || a == "ask" }

// checkPrefix validates an allowed_path_prefixes entry.
func checkPrefix(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path prefix")
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path prefix %q is relative: allowed_path_prefixes must be absolute", p)
	}
	return path.Clean(p), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
