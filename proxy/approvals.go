package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/internal/jsontext"
)

// Approvals is where asks that no human could answer live wait for one:
// a directory beside the audit log (LOG.approvals/) with a file per
// pending ask and per answer. The proxy writes pending asks and reads
// answers; `bailiff approve` and `decline` write answers. Only the proxy
// writes the log: an answer becomes a grant record when the proxy takes
// it, and binds to the exact call (tool and argument digest) it was given
// for, for one retry.
//
// Nothing in the directory is trusted. An answer counts only when it is
// signed by an approver key the gateway was configured with, over the
// ask as the gateway itself recorded it (chain.Approval); a pending file
// is a notice for the human, and `bailiff approvals` shows the call from
// the audit log, not from it.
type Approvals struct {
	Dir string
}

// ApprovalsDir is the approvals directory of the log at name.
func ApprovalsDir(log string) string { return log + ".approvals" }

// approveCommand is the command line that answers approval id, naming
// the real log (absolute, shell-quoted): a human copies it from the
// agent's chat, from whatever directory they are in.
func (a *Approvals) approveCommand(id string) string {
	log := strings.TrimSuffix(a.Dir, ".approvals")
	if abs, err := filepath.Abs(log); err == nil {
		log = abs
	}
	return "bailiff approve " + id + " --audit " + shellQuote(log)
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Pending is an ask waiting for a human.
type Pending struct {
	ID string `json:"id"`
	// Kind is "" for a call waiting for approval, "definition" for a
	// changed tool definition waiting to be accepted (Digest is the new
	// definition's).
	Kind    string         `json:"kind,omitempty"`
	Session string         `json:"session"`
	Server  string         `json:"server"`
	Call    string         `json:"call"`
	Tool    string         `json:"tool"`
	Args    map[string]any `json:"args"`
	Digest  string         `json:"digest"`
	Reason  string         `json:"reason"`
	Asked   string         `json:"asked"`
}

// AnswerFile is a human's signed answer to a pending ask.
type AnswerFile struct {
	ID     string `json:"id"`
	Answer string `json:"answer"` // approve or decline
	// Approver is the signing key's name, for whoever reads the file; the
	// proxy takes the name from the key, never from here.
	Approver  string          `json:"approver"`
	Signature chain.Signature `json:"signature"`
}

func validID(id string) error {
	if id == "" || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return fmt.Errorf("%q is not an approval id", id)
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Ask records a pending ask.
func (a *Approvals) Ask(p Pending) error {
	if err := validID(p.ID); err != nil {
		return err
	}
	return writeJSON(filepath.Join(a.Dir, "pending", p.ID+".json"), p)
}

// List returns the pending asks, oldest first.
func (a *Approvals) List() ([]Pending, error) {
	files, err := filepath.Glob(filepath.Join(a.Dir, "pending", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Pending
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var p Pending
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("%s: %v", f, jsontext.PlainJSON(err, ""))
		}
		if _, answered := a.Answer(p.ID); answered {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Asked != out[j].Asked {
			return out[i].Asked < out[j].Asked
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Decide answers a pending ask: it signs ap (the ask as the audit log
// records it, with the answer and the time) with the approver's private
// key skey and writes the answer. It refuses an id that is not pending,
// and a second answer. It returns the approver's name, the key's.
func (a *Approvals) Decide(ap chain.Approval, skey string) (string, error) {
	if err := validID(ap.ID); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(a.Dir, "pending", ap.ID+".json")); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("no pending approval %q", ap.ID)
	}
	if _, done := a.Answer(ap.ID); done {
		return "", fmt.Errorf("approval %q is already answered", ap.ID)
	}
	if ap.Answer != "approve" && ap.Answer != "decline" {
		return "", fmt.Errorf("answer %q is not approve or decline", ap.Answer)
	}
	sig, err := chain.SignApproval(ap, skey)
	if err != nil {
		return "", err
	}
	name := chain.KeyName(skey)
	return name, writeJSON(filepath.Join(a.Dir, "answers", ap.ID+".json"), AnswerFile{ID: ap.ID, Answer: ap.Answer, Approver: name, Signature: sig})
}

// Answer returns the answer file of a pending ask, if any. It is not
// checked here: see Proxy.takeAnswer.
func (a *Approvals) Answer(id string) (AnswerFile, bool) {
	var ans AnswerFile
	if validID(id) != nil {
		return ans, false
	}
	b, err := os.ReadFile(filepath.Join(a.Dir, "answers", id+".json"))
	if err != nil || json.Unmarshal(b, &ans) != nil || ans.ID != id || (ans.Answer != "approve" && ans.Answer != "decline") {
		return AnswerFile{}, false
	}
	return ans, true
}

// Reject removes an answer the proxy refused, leaving the ask pending for
// a real approver.
func (a *Approvals) Reject(id string) {
	os.Remove(filepath.Join(a.Dir, "answers", id+".json"))
}

// Done removes an ask whose answer the proxy has taken.
func (a *Approvals) Done(id string) {
	os.Remove(filepath.Join(a.Dir, "pending", id+".json"))
	os.Remove(filepath.Join(a.Dir, "answers", id+".json"))
}

// Recorded is a pending ask as the gateway's audit log records it: what a
// human should read and sign, whatever the pending file says.
type Recorded struct {
	Found     bool
	Approval  chain.Approval // the ask to sign, Answer and Time unset
	Args      map[string]any // the call's arguments as logged (after redaction)
	Redacted  []string
	Verdict   string // the call's recorded verdict
	Reason    string // why the policy asks, as logged
	Asked     time.Time
	Principal string   // the session's subject, who may not approve
	Approvers []string // the approver keys the session trusts
	// Differs names the fields where the pending file disagrees with the
	// log ("" when it agrees).
	Differs string
	// Ended is set when the ask's session has ended: its call can no
	// longer be retried, so an answer would approve nothing.
	Ended bool
	// Inconsistent says why the log's own record of the ask cannot be
	// what the gateway wrote ("" when nothing is found): a call with
	// nothing redacted whose digest is not the digest of its logged
	// arguments, so what a human would read is not what they would sign.
	Inconsistent string
}

// Signable refuses an ask a human should not sign as shown: one the log
// does not hold, one whose logged record is inconsistent, and one whose
// pending file disagrees with the log (the log, or the directory beside
// it, was edited by someone other than the gateway).
func (r Recorded) Signable() error {
	switch {
	case !r.Found:
		return errors.New("the audit log holds no such ask: the pending file was not written by the gateway")
	case r.Inconsistent != "":
		return fmt.Errorf("the audit log's record of the ask is inconsistent (%s): the log was rewritten", r.Inconsistent)
	case r.Differs != "":
		return fmt.Errorf("the pending file disagrees with the audit log (%s): one of them was edited by someone other than the gateway", r.Differs)
	}
	return nil
}

// FromLog finds each pending ask in the audit log. An ask the log does not
// hold is returned with Found false: nothing the gateway asked.
func FromLog(log io.Reader, pending []Pending) (map[string]Recorded, error) {
	type session struct {
		server, principal string
		approvers         []string
		tools             map[string]string // name -> digest, as last listed
		at                map[string]time.Time
	}
	want := map[string]map[string]int{} // session -> call -> pending index
	for i, p := range pending {
		if p.Kind == "" {
			if want[p.Session] == nil {
				want[p.Session] = map[string]int{}
			}
			want[p.Session][p.Call] = i
		}
	}
	sessions := map[string]*session{}
	ended := map[string]bool{}
	out := map[string]Recorded{}
	rd := chain.NewReader(log)
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		var ve *chain.VerifyError
		if errors.As(err, &ve) && ve.Torn {
			break // the gateway is writing its last record
		}
		if err != nil {
			return nil, fmt.Errorf("the audit log does not verify: %v", err)
		}
		s := sessions[rec.Session]
		switch rec.Kind {
		case chain.KindEnd:
			ended[rec.Session] = true
		case chain.KindSession:
			var b audit.SessionBody
			if chain.DecodeBody(rec.Body, &b) != nil {
				continue
			}
			s = &session{server: b.Server, principal: b.Principal.Subject, approvers: b.Approvers, tools: map[string]string{}, at: map[string]time.Time{}}
			for _, t := range b.Tools {
				s.tools[t.Name] = t.Digest
				s.at[t.Name] = rec.TS
			}
			sessions[rec.Session] = s
		case chain.KindTools:
			var b audit.ToolsBody
			if s == nil || chain.DecodeBody(rec.Body, &b) != nil {
				continue
			}
			for _, t := range b.Tools {
				if s.tools[t.Name] != t.Digest {
					s.at[t.Name] = rec.TS
				}
				s.tools[t.Name] = t.Digest
			}
		case chain.KindCall:
			i, ok := want[rec.Session][callID(rec.Body)]
			if s == nil || !ok {
				continue
			}
			var b audit.CallBody
			if chain.DecodeBody(rec.Body, &b) != nil || b.Verdict != "ask" {
				continue // not an ask: nothing to approve
			}
			p := pending[i]
			r := Recorded{Found: true, Args: b.Args, Redacted: b.Redacted, Verdict: b.Verdict, Reason: b.Reason, Asked: rec.TS,
				Principal: s.principal, Approvers: s.approvers,
				Approval: chain.Approval{ID: p.ID, Kind: chain.ApproveCall, Session: rec.Session, Server: orServer(b.Server, s.server), Tool: b.Tool, Digest: b.Digest}}
			var diff []string
			if p.Server != r.Approval.Server {
				diff = append(diff, "server")
			}
			if p.Tool != b.Tool {
				diff = append(diff, "tool")
			}
			if p.Digest != b.Digest {
				diff = append(diff, "digest")
			}
			if !sameJSON(p.Args, b.Args) {
				diff = append(diff, "arguments")
			}
			r.Differs = strings.Join(diff, ", ")
			// With nothing redacted, the digest is SHA-256 of the logged
			// arguments (verify checks the same): one that is not was
			// rewritten, and the human would approve other arguments
			// than the ones shown. A redacted call's digest is keyed by
			// the gateway's secret and cannot be checked here.
			if len(b.Redacted) == 0 && engine.ArgsDigest(b.Args) != b.Digest {
				r.Inconsistent = "its digest " + b.Digest + " is not the digest of its logged arguments"
			}
			out[p.ID] = r
		}
	}
	for _, p := range pending {
		s := sessions[p.Session]
		if p.Kind != "definition" || s == nil {
			continue
		}
		name := p.Tool
		if p.Server != s.server {
			name = p.Server + "." + p.Tool // a gateway's tool
		}
		digest, ok := s.tools[name]
		if !ok || digest == "" {
			continue
		}
		r := Recorded{Found: true, Asked: s.at[name], Principal: s.principal, Approvers: s.approvers,
			Reason:   "the tool's definition changed since the session pinned it",
			Approval: chain.Approval{ID: p.ID, Kind: chain.ApproveDefinition, Session: p.Session, Server: s.server, Tool: name, Digest: digest}}
		if p.Digest != digest {
			r.Differs = "digest"
		}
		out[p.ID] = r
	}
	for id, r := range out {
		r.Ended = ended[r.Approval.Session]
		out[id] = r
	}
	return out, nil
}

func callID(body []byte) string {
	raw, ok := chain.RawField(body, "call")
	var id string
	if !ok || json.Unmarshal(raw, &id) != nil {
		return ""
	}
	return id
}

func orServer(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sameJSON compares two argument objects as JSON values (the pending file
// is decoded with float numbers, the log with json.Number).
func sameJSON(a, b map[string]any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var u, v any
	if json.Unmarshal(x, &u) != nil || json.Unmarshal(y, &v) != nil {
		return false
	}
	return reflect.DeepEqual(u, v)
}
