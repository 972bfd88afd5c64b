// Package chainfix makes the audit-log fixtures under fixtures/chain: it
// records the traces in fixtures/chain/src with `record`'s code, then
// damages copies the way an attacker or a crash would. Each fixture is a
// log (<name>.jsonl) with its evidence store (<name>.jsonl.evidence/);
// good_* must verify, fail_* must not. Regenerate with
//
//	go run ./internal/chainfix/gen
//
// and the test in cmd/bailiff checks that the committed fixtures are
// exactly what this code makes.
package chainfix

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
	"bailiff/replay"
)

// log is a recorded log in memory: its lines and its evidence.
type log struct {
	lines    [][]byte
	evidence map[string][]byte // digest -> content
	purged   []string          // digests a purge removed: the store marks them
}

func (l *log) clone() *log {
	c := &log{evidence: map[string][]byte{}}
	for _, ln := range l.lines {
		c.lines = append(c.lines, append([]byte(nil), ln...))
	}
	for k, v := range l.evidence {
		c.evidence[k] = v
	}
	return c
}

// Generate writes every fixture into dir, reading its inputs from dir/src.
func Generate(dir string) error {
	src := filepath.Join(dir, "src")
	polData, err := os.ReadFile(filepath.Join(src, "policy.yaml"))
	if err != nil {
		return err
	}
	pol, err := engine.Load("policy.yaml", polData)
	if err != nil {
		return err
	}
	secret, err := os.ReadFile(filepath.Join(src, "secret"))
	if err != nil {
		return err
	}
	skey, err := os.ReadFile(filepath.Join(src, "test.key"))
	if err != nil {
		return err
	}
	lee, err := os.ReadFile(filepath.Join(src, "lee.key"))
	if err != nil {
		return err
	}
	approvers := map[string]string{"lee": strings.TrimSpace(string(lee))}
	mail, err := record(pol, secret, approvers, filepath.Join(src, "mail.jsonl"))
	if err != nil {
		return err
	}
	web, err := record(pol, secret, approvers, filepath.Join(src, "web.jsonl"))
	if err != nil {
		return err
	}
	out := map[string]*log{
		"good_mail": mail,
		"good_web":  web,
	}

	purged := mail.clone()
	for _, rec := range records(purged) {
		if rec.Kind == chain.KindResult && rec.Session == "s1" {
			var b audit.ResultBody
			_ = chain.DecodeBody(rec.Body, &b)
			delete(purged.evidence, b.Content)
			purged.purged = append(purged.purged, b.Content)
		}
	}
	out["good_purged"] = purged

	altered := mail.clone()
	for d, content := range altered.evidence {
		if bytes.Contains(content, []byte("attacker@evil.example")) {
			altered.evidence[d] = bytes.ReplaceAll(content, []byte("attacker@evil.example"), []byte("a-friend@corp.example"))
		}
	}
	out["fail_evidence_altered"] = altered

	// Damage that integrity alone catches: no re-hashing.
	edited := mail.clone()
	i := find(edited, "c2")
	edited.lines[i] = bytes.Replace(edited.lines[i], []byte(`"verdict":"deny"`), []byte(`"verdict":"allow"`), 1)
	out["fail_edited_field"] = edited
	// The same damage in a log of its own, so a pack can hold two
	// tampered logs without holding one log twice.
	editedWeb := web.clone()
	i = find(editedWeb, "e2")
	editedWeb.lines[i] = bytes.Replace(editedWeb.lines[i], []byte(`"method":"GET"`), []byte(`"method":"PUT"`), 1)
	out["fail_edited_web"] = editedWeb

	deleted := mail.clone()
	i = find(deleted, "c2")
	deleted.lines = append(deleted.lines[:i], deleted.lines[i+1:]...)
	out["fail_deleted_record"] = deleted

	swapped := mail.clone()
	i = find(swapped, "c3")
	swapped.lines[i], swapped.lines[i+1] = swapped.lines[i+1], swapped.lines[i]
	out["fail_swapped_records"] = swapped

	// Cut in the middle of the last record: what a crash leaves.
	torn := mail.clone()
	last := torn.lines[len(torn.lines)-1]
	torn.lines[len(torn.lines)-1] = last[:len(last)/2]
	out["fail_torn_tail"] = torn

	// The last records removed cleanly: only a checkpoint can tell.
	truncated := mail.clone()
	truncated.lines = truncated.lines[:len(truncated.lines)-4]
	out["fail_truncated"] = truncated

	// Damage made consistent by re-hashing the whole chain: only the
	// semantic check (or a checkpoint) can tell.
	out["fail_forged_verdict"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.CallBody); ok && b.Call == "c2" {
			b.Verdict, b.Check, b.Reason = "allow", "rules", "rule send-mail: allow"
			b.TaintedBy, b.Destination = nil, ""
		}
	})
	if err != nil {
		return err
	}
	out["fail_policy_edited"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.SessionBody); ok && rec.Session == "s1" {
			b.Policy = strings.Replace(b.Policy, `"trusted_destinations":["@corp.example"]`, `"trusted_destinations":["@corp.example","@evil.example"]`, 1)
		}
	})
	if err != nil {
		return err
	}
	// An edited policy with its version made to match: it loads, and the
	// verdicts recorded under the real policy no longer recompute.
	out["fail_policy_rewritten"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.SessionBody); ok && rec.Session == "s1" {
			p, err := engine.Load("edit", []byte(strings.Replace(b.Policy, `"trusted_destinations":["@corp.example"]`, `"trusted_destinations":["@corp.example","@evil.example"]`, 1)))
			if err == nil {
				b.Policy, b.PolicyVersion = string(p.Canonical()), p.Version()
			}
		}
	})
	if err != nil {
		return err
	}
	out["fail_grant_forged"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.GrantBody); ok && b.Grant == "g-c4" {
			// Bound to other arguments than those of the call it approves.
			b.Digest = engine.ArgsDigest(map[string]any{"to": "carol@partner.example", "subject": "contract", "text": "something else"})
		}
	})
	if err != nil {
		return err
	}
	out["fail_grant_reused"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.CallBody); ok && b.Call == "d4" {
			b.Verdict, b.Check, b.Grant, b.Reason = "allow", "approval", "g-d1", "approved by lee (grant g-d1)"
		}
	})
	if err != nil {
		return err
	}
	out["fail_grant_expired"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.GrantBody); ok && b.Grant == "g-c4" {
			b.Expires = "2026-11-03T09:00:30.000000000Z"
		}
	})
	if err != nil {
		return err
	}
	out["fail_grant_self_approved"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.GrantBody); ok && b.Grant == "g-c4" {
			b.Approver = "ana"
			b.Decision.Reason = "approved by ana (grant g-c4)"
		}
	})
	if err != nil {
		return err
	}
	// Answers an agent could have written itself: no signature, a key the
	// session does not trust, the principal's own key (trusted by the
	// session), a real signature moved from another approval, and an
	// unsigned grant posing as an answer given through the client.
	out["fail_grant_unsigned"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.GrantBody); ok && b.Grant == "g-c4" {
			b.Signature = nil
		}
	})
	if err != nil {
		return err
	}
	intruder, _, err := chain.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 32)), "lee")
	if err != nil {
		return err
	}
	resign := func(skey string) func(rec *chain.Record, body any) {
		return func(rec *chain.Record, body any) {
			if b, ok := body.(*audit.GrantBody); ok && b.Grant == "g-c4" {
				sig, err := chain.SignApproval(chain.Approval{ID: b.Grant, Kind: chain.ApproveCall, Session: rec.Session, Server: "mail",
					Tool: b.Tool, Digest: b.Digest, Answer: b.Answer, Time: b.Signature.Time}, skey)
				if err != nil {
					panic(err)
				}
				b.Signature, b.Approver = &sig, chain.KeyName(skey)
				b.Decision.Reason = "approved by " + b.Approver + " (grant g-c4)"
			}
		}
	}
	out["fail_grant_untrusted_key"], err = rewrite(mail, resign(intruder))
	if err != nil {
		return err
	}
	principal, _, err := chain.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{9}, 32)), "ana")
	if err != nil {
		return err
	}
	principalPub, _ := chain.PublicKey(principal)
	signAsAna := resign(principal)
	out["fail_grant_principal_key"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.SessionBody); ok && rec.Session == "s1" {
			b.Approvers = append(b.Approvers, principalPub)
		}
		signAsAna(rec, body)
	})
	if err != nil {
		return err
	}
	var d1 *chain.Signature
	for _, rec := range records(mail) {
		var b audit.GrantBody
		if rec.Kind == chain.KindGrant && chain.DecodeBody(rec.Body, &b) == nil && b.Grant == "g-d1" {
			d1 = b.Signature
		}
	}
	out["fail_grant_moved_signature"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.GrantBody); ok && b.Grant == "g-c4" {
			b.Signature = d1
		}
	})
	if err != nil {
		return err
	}
	out["fail_grant_fake_elicitation"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.GrantBody); ok && b.Grant == "g-c4" {
			b.Grant, b.Approver, b.Signature = "elicit-c4", chain.ElicitationApprover, nil
			b.Decision.Reason, b.Decision.Grant = "approved by elicitation (grant elicit-c4)", "elicit-c4"
		}
	})
	if err != nil {
		return err
	}
	out["fail_args_edited"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.CallBody); ok && b.Call == "c3" {
			// The send that went to a colleague now claims another address.
			b.Args["to"] = "attacker@evil.example"
		}
	})
	if err != nil {
		return err
	}
	out["fail_engine_version"], err = rewrite(mail, func(rec *chain.Record, body any) {
		if b, ok := body.(*audit.SessionBody); ok && rec.Session == "s2" {
			b.Engine = "bailiff-engine/0"
		}
	})
	if err != nil {
		return err
	}
	for name, l := range out {
		if err := write(dir, name, l); err != nil {
			return err
		}
	}
	// A checkpoint of the whole mail log, signed with the fixture key, to
	// check the truncated and re-hashed logs against.
	tree, _, err := chain.ReadTree(bytes.NewReader(join(mail.lines)))
	if err != nil {
		return err
	}
	root, _ := tree.Root(tree.Size())
	k := strings.TrimSpace(string(skey))
	signed, err := chain.SignCheckpoint(chain.Checkpoint{Origin: chain.KeyName(k), Size: tree.Size(), Root: root}, k)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "good_mail.ckpt"), signed, 0o644)
}

func record(pol *engine.Policy, secret []byte, approvers map[string]string, trace string) (*log, error) {
	data, err := os.ReadFile(trace)
	if err != nil {
		return nil, err
	}
	events, err := replay.ParseTrace(filepath.Base(trace), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "chainfix")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var buf bytes.Buffer
	r := &replay.Recorder{Policy: pol, Log: chain.NewWriter(&buf, chain.None), Evidence: chain.Evidence{Dir: tmp}, Secret: secret, Approvers: approvers}
	if err := r.Record(filepath.Base(trace), events); err != nil {
		return nil, err
	}
	l := &log{evidence: map[string][]byte{}, lines: bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))}
	files, _ := os.ReadDir(tmp)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(tmp, f.Name()))
		if err != nil {
			return nil, err
		}
		l.evidence["sha256:"+f.Name()] = b
	}
	return l, nil
}

func records(l *log) []chain.Record {
	var out []chain.Record
	for _, ln := range l.lines {
		r, err := chain.Parse(ln)
		if err != nil {
			panic(err) // only called on logs as recorded
		}
		out = append(out, r)
	}
	return out
}

// find returns the index of the call record of call id.
func find(l *log, id string) int {
	for i, r := range records(l) {
		if r.Kind == chain.KindCall && bytes.Contains(r.Body, []byte(`"call":"`+id+`"`)) {
			return i
		}
	}
	panic("no call " + id)
}

// rewrite decodes every record of l into its typed body, lets edit change
// it, and writes a new, consistent chain: every hash and link recomputed.
func rewrite(l *log, edit func(rec *chain.Record, body any)) (*log, error) {
	var buf bytes.Buffer
	w := chain.NewWriter(&buf, chain.None)
	for _, rec := range records(l) {
		var body any
		switch rec.Kind {
		case chain.KindSession:
			body = &audit.SessionBody{}
		case chain.KindCall:
			body = &audit.CallBody{}
		case chain.KindGrant:
			body = &audit.GrantBody{}
		case chain.KindResult:
			body = &audit.ResultBody{}
		case chain.KindTools:
			body = &audit.ToolsBody{}
		case chain.KindEnd:
			body = &audit.EndBody{}
		default:
			return nil, fmt.Errorf("cannot rewrite a %s record", rec.Kind)
		}
		if err := chain.DecodeBody(rec.Body, body); err != nil {
			return nil, err
		}
		edit(&rec, body)
		if _, err := w.Append(rec.TS, rec.Session, rec.Kind, body); err != nil {
			return nil, err
		}
	}
	out := l.clone()
	out.lines = bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	return out, nil
}

func join(lines [][]byte) []byte {
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func write(dir, name string, l *log) error {
	data := join(l.lines)
	if strings.HasSuffix(name, "_torn_tail") {
		data = bytes.TrimSuffix(data, []byte("\n"))
	}
	p := filepath.Join(dir, name+".jsonl")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return err
	}
	ev := chain.EvidenceDir(p)
	if err := os.RemoveAll(ev); err != nil {
		return err
	}
	if err := os.MkdirAll(ev, 0o755); err != nil {
		return err
	}
	digests := make([]string, 0, len(l.evidence))
	for d := range l.evidence {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		if err := os.WriteFile(filepath.Join(ev, strings.TrimPrefix(d, "sha256:")), l.evidence[d], 0o644); err != nil {
			return err
		}
	}
	for _, d := range l.purged {
		if err := (chain.Evidence{Dir: ev}).MarkPurged(d); err != nil {
			return err
		}
	}
	return nil
}

// Files lists every file Generate writes under dir, relative to it, so a
// test can compare a fresh generation with the committed one.
func Files(dir string) ([]string, error) {
	var out []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if info.IsDir() {
			if rel == "src" {
				return filepath.SkipDir
			}
			return nil
		}
		out = append(out, rel)
		return nil
	})
	sort.Strings(out)
	return out, err
}
