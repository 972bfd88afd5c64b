package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"bailiff/audit"
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
// ask as the gateway itself recorded it (audit.Approval); a pending file
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
	Signature audit.Signature `json:"signature"`
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
		if err := jsontext.NoDuplicateKeys(b); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		if err := jsontext.ExactFieldCase(b, &p); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
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
func (a *Approvals) Decide(ap audit.Approval, skey string) (string, error) {
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
	sig, err := audit.SignApproval(ap, skey)
	if err != nil {
		return "", err
	}
	name := audit.ApproverName(skey)
	return name, writeJSON(filepath.Join(a.Dir, "answers", ap.ID+".json"), AnswerFile{ID: ap.ID, Answer: ap.Answer, Approver: name, Signature: sig})
}

// Answer returns the answer file of a pending ask, if any. It is not
// checked here: see Proxy.takeAnswer. A file with a key given twice, or
// a field's name in another case, is no answer, like one that is not
// JSON: the signature was checked over one of its values and the answer
// might be taken from the other.
func (a *Approvals) Answer(id string) (AnswerFile, bool) {
	var ans AnswerFile
	if validID(id) != nil {
		return ans, false
	}
	b, err := os.ReadFile(filepath.Join(a.Dir, "answers", id+".json"))
	if err != nil || jsontext.NoDuplicateKeys(b) != nil || jsontext.ExactFieldCase(b, &ans) != nil || json.Unmarshal(b, &ans) != nil || ans.ID != id || (ans.Answer != "approve" && ans.Answer != "decline") {
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
