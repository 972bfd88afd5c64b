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
)

// Approvals is where asks that no human could answer live wait for one:
// a directory beside the audit log (LOG.approvals/) with a file per
// pending ask and per answer. The proxy writes pending asks and reads
// answers; `bailiff approve` and `decline` write answers. Only the proxy
// writes the log: an answer becomes a grant record when the proxy takes
// it, and binds to the exact call (tool and argument digest) it was given
// for, for one retry.
type Approvals struct {
	Dir string
}

// ApprovalsDir is the approvals directory of the log at name.
func ApprovalsDir(log string) string { return log + ".approvals" }

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

// AnswerFile is a human's answer to a pending ask.
type AnswerFile struct {
	ID       string `json:"id"`
	Answer   string `json:"answer"` // approve or decline
	Approver string `json:"approver"`
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
			return nil, fmt.Errorf("%s: %v", f, err)
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

// Decide answers a pending ask. It refuses an id that is not pending, and
// a second answer.
func (a *Approvals) Decide(id, answer, approver string) error {
	if err := validID(id); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(a.Dir, "pending", id+".json")); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no pending approval %q", id)
	}
	if _, done := a.Answer(id); done {
		return fmt.Errorf("approval %q is already answered", id)
	}
	if approver == "" {
		return errors.New("an answer needs the approver's name")
	}
	return writeJSON(filepath.Join(a.Dir, "answers", id+".json"), AnswerFile{ID: id, Answer: answer, Approver: approver})
}

// Answer returns the answer given to a pending ask, if any.
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

// Done removes an ask whose answer the proxy has taken.
func (a *Approvals) Done(id string) {
	os.Remove(filepath.Join(a.Dir, "pending", id+".json"))
	os.Remove(filepath.Join(a.Dir, "answers", id+".json"))
}
