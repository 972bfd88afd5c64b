// Package chainfix makes the audit-log fixtures under fixtures/chain: it
// records the traces in fixtures/chain/src with `record`'s code, then
// damages copies the way an attacker or a crash would. Each fixture is a
// log (<name>.jsonl) with its evidence store (<name>.jsonl.evidence/);
// good_* must verify, fail_* must not. The stores are written the way they
// were before packs, one file per content and HEX.purged marks, so every
// test over the fixtures reads that form too (stores recorded in tests
// are packs). Regenerate with
//
//	go run ./internal/chainfix/gen
//
// and the test in cmd/bailiff checks that the committed fixtures are
// exactly what this code makes.
package chainfix

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"bailiff/audit"
	"bailiff/chain"
	"bailiff/engine"
)

// Generate writes every fixture into dir, reading its inputs from dir/src.
//
// long: it is the list of fixtures, one edit of a good log each, in the
// order they are written; split up, the list would no longer read as one.
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
				sig, err := audit.SignApproval(audit.Approval{ID: b.Grant, Kind: audit.ApproveCall, Session: rec.Session, ToolRef: engine.ToolRef{Server: "mail", Tool: b.Tool},
					Digest: b.Digest, Answer: b.Answer, Time: b.Signature.Time}, skey)
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
	var d1 *audit.Signature
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
			b.Grant, b.Approver, b.Signature = "elicit-c4", audit.ElicitationApprover, nil
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
