package replay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"bailiff/chain"
	"bailiff/engine"
	"bailiff/internal/records"
)

// The kinds of finding verify reports.
const (
	FindIntegrity  = "integrity"  // hash, link, seq or a torn line
	FindCheckpoint = "checkpoint" // truncation or rollback against a checkpoint
	FindPolicy     = "policy"     // the embedded policy does not load or match its version
	FindVerdict    = "verdict"    // a recorded decision the engine does not recompute
	FindGrant      = "grant"      // a grant that does not answer what it claims
	FindRecord     = "record"     // a record that cannot be read or does not fit its session
	FindEvidence   = "evidence"   // evidence that is missing (not purged) or altered
	// WarnTime is a warning, not a finding: a record earlier than the one
	// before it. One writer appends in order, so its clock went back (a
	// host's clock set back, or records written elsewhere and spliced in
	// with their hashes redone); the chain itself is intact.
	WarnTime = "time"
)

// Finding is one disagreement between a log and what it should be.
type Finding struct {
	File       string `json:"file"`
	Seq        int64  `json:"seq"`
	Session    string `json:"session"`
	Call       string `json:"call"`
	Kind       string `json:"kind"`
	Recorded   string `json:"recorded"`
	Recomputed string `json:"recomputed"`
	Reason     string `json:"reason"`
	// Torn marks an integrity finding that is a partial last line.
	Torn bool `json:"-"`
}

// Unevaluable is a recorded decision that cannot be recomputed because it
// depended on input that was redacted or purged. It is not a failure.
type Unevaluable struct {
	File     string `json:"file"`
	Seq      int64  `json:"seq"`
	Session  string `json:"session"`
	Call     string `json:"call"`
	Tool     string `json:"tool"`
	Recorded string `json:"recorded"`
	Reason   string `json:"reason"`
}

// LogReport is what verify found in one log.
type LogReport struct {
	File     string
	Records  int64
	Sessions int
	Calls    int
	// Contents counts the result records that refer to stored content
	// (semantics only): a log with none needs no evidence store.
	Contents    int
	Checked     bool // semantics were checked (not integrity only)
	Checkpoint  *chain.Checkpoint
	Findings    []Finding
	Unevaluable []Unevaluable
	// Warnings are reported without failing the log: timestamps that go
	// back (WarnTime).
	Warnings []Finding
}

// VerifyOptions tunes VerifyLog.
type VerifyOptions struct {
	// Checkpoint, when set, is a verified checkpoint of this log kept
	// elsewhere: a log shorter than it was truncated, and one whose first
	// records do not have its root was rewritten.
	Checkpoint *chain.Checkpoint
	// IntegrityOnly skips the semantic check.
	IntegrityOnly bool
	// Workers bounds the sessions verified at once (default GOMAXPROCS).
	Workers int
	// Key, when set, is the public key in-log checkpoint records must be
	// signed with.
	Key string
	// ApproverKeys, when set, are the only approver keys verify trusts: a
	// session record that trusts another (as a rewritten log could, to
	// sign its own grants) is a finding, and that key approves nothing.
	ApproverKeys []string
}

// VerifyLog checks one log: its integrity (every record's hash, link and
// seq), against a checkpoint if one is given, and, unless IntegrityOnly,
// its semantics: every session is rebuilt from its own records (policy,
// pins, outputs from the evidence store, grants) and every recorded
// decision recomputed. Sessions are verified in parallel. Errors are for
// unusable input only (it cannot be read, is empty: chain.ErrEmpty, or is
// not a log: chain.ErrNotALog); everything wrong with the log is a
// Finding.
func VerifyLog(name string, r io.Reader, ev chain.Evidence, opt VerifyOptions) (*LogReport, error) {
	rep := &LogReport{File: name, Checked: !opt.IntegrityOnly, Checkpoint: opt.Checkpoint}
	if opt.IntegrityOnly {
		return rep, verifyIntegrity(rep, r, opt)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	v := &verifier{file: name, ev: ev, key: opt.Key, approvers: opt.ApproverKeys, policies: map[string]*policyEntry{}}
	if _, err := os.Stat(ev.Dir); err != nil {
		v.noStore = true
	}
	chans := make([]chan chain.Record, workers)
	results := make([]*sessionSet, workers)
	var wg sync.WaitGroup
	for i := range chans {
		chans[i] = make(chan chain.Record, 256)
		results[i] = &sessionSet{v: v, sessions: map[string]*vsession{}}
		wg.Add(1)
		go func(in chan chain.Record, set *sessionSet) {
			defer wg.Done()
			// A worker that fails keeps draining its channel, so the
			// reader never blocks, and its failure fails the whole run:
			// a verify that lost a session must never say ok.
			for rec := range in {
				if set.failed == nil {
					set.failed = safeRecord(set, rec)
				}
			}
		}(chans[i], results[i])
	}
	rd := chain.NewReader(r)
	var (
		readErr error
		last    time.Time // the time of the record before
	)
	for {
		if opt.Checkpoint != nil && rd.Count() == opt.Checkpoint.Size {
			checkRoot(rep, opt.Checkpoint, rd.Root())
		}
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		var ve *chain.VerifyError
		if errors.As(err, &ve) {
			rep.Findings = append(rep.Findings, integrityFinding(name, ve))
			break
		}
		if err != nil {
			readErr = err
			break
		}
		if rec.TS.Before(last) {
			rep.Warnings = append(rep.Warnings, Finding{File: name, Seq: rec.Seq, Session: rec.Session, Kind: WarnTime,
				Recorded: rec.TS.Format(chain.TimeFormat), Recomputed: "not before " + last.Format(chain.TimeFormat),
				Reason: fmt.Sprintf("time goes back: record %d is at %s, before record %d at %s", rec.Seq, rec.TS.Format(chain.TimeFormat), rec.Seq-1, last.Format(chain.TimeFormat))})
		}
		last = rec.TS
		if rec.Kind == chain.KindCheckpoint {
			v.checkpointRecord(rec, rd.RootBefore())
			continue
		}
		if rec.Kind == chain.KindMalformed {
			// A request that never became a call decides nothing, and may
			// come before its session's record.
			var b chain.MalformedBody
			if err := chain.DecodeBody(rec.Body, &b); err != nil {
				v.findings = append(v.findings, Finding{File: name, Seq: rec.Seq, Session: rec.Session, Kind: FindRecord, Reason: "malformed record: " + err.Error()})
			}
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(rec.Session))
		chans[h.Sum32()%uint32(workers)] <- rec
	}
	for _, c := range chans {
		close(c)
	}
	wg.Wait()
	for _, set := range results {
		set.close()
	}
	if readErr != nil {
		return nil, inputError(name, readErr)
	}
	for _, set := range results {
		if set.failed != nil {
			return nil, fmt.Errorf("%s: %w", name, set.failed)
		}
		if set.fatal != nil {
			return nil, fmt.Errorf("%s: %w", name, set.fatal)
		}
	}
	rep.Records = rd.Count()
	if rep.Records == 0 && len(rep.Findings) == 0 {
		return nil, inputError(name, chain.ErrEmpty)
	}
	if opt.Checkpoint != nil && rd.Count() < opt.Checkpoint.Size && len(rep.Findings) == 0 {
		rep.Findings = append(rep.Findings, Finding{File: name, Seq: rd.Count(), Kind: FindCheckpoint,
			Recorded: fmt.Sprintf("%d records", rd.Count()), Recomputed: fmt.Sprintf("%d records", opt.Checkpoint.Size),
			Reason: fmt.Sprintf("the log was truncated: the checkpoint covers %d records and the log has %d", opt.Checkpoint.Size, rd.Count())})
	}
	for _, set := range results {
		rep.Findings = append(rep.Findings, set.findings...)
		rep.Unevaluable = append(rep.Unevaluable, set.unevaluable...)
		rep.Sessions += len(set.sessions)
		rep.Calls += set.calls
		rep.Contents += set.contents
	}
	rep.Findings = append(rep.Findings, v.findings...)
	sortReport(rep)
	return rep, nil
}

func verifyIntegrity(rep *LogReport, r io.Reader, opt VerifyOptions) error {
	var at []int64
	if opt.Checkpoint != nil {
		at = append(at, opt.Checkpoint.Size)
	}
	sum, err := chain.VerifyIntegrity(r, at...)
	rep.Records = sum.Records
	var ve *chain.VerifyError
	if errors.As(err, &ve) {
		rep.Findings = append(rep.Findings, integrityFinding(rep.File, ve))
		return nil
	}
	if err != nil {
		return inputError(rep.File, err)
	}
	if sum.Records == 0 {
		return inputError(rep.File, chain.ErrEmpty)
	}
	if c := opt.Checkpoint; c != nil {
		if root, ok := sum.RootAt[c.Size]; ok {
			checkRoot(rep, c, root)
		} else {
			rep.Findings = append(rep.Findings, Finding{File: rep.File, Seq: sum.Records, Kind: FindCheckpoint,
				Recorded: fmt.Sprintf("%d records", sum.Records), Recomputed: fmt.Sprintf("%d records", c.Size),
				Reason: fmt.Sprintf("the log was truncated: the checkpoint covers %d records and the log has %d", c.Size, sum.Records)})
		}
	}
	return nil
}

// inputError names the file an error is about. The two that say what the
// file is read as a sentence about it ("audit.jsonl is empty: ...").
func inputError(name string, err error) error {
	if errors.Is(err, chain.ErrNotALog) || errors.Is(err, chain.ErrEmpty) {
		return fmt.Errorf("%s %w", name, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

func checkRoot(rep *LogReport, c *chain.Checkpoint, root [32]byte) {
	if root == c.Root {
		return
	}
	rep.Findings = append(rep.Findings, Finding{File: rep.File, Seq: c.Size - 1, Kind: FindCheckpoint,
		Recorded: "root " + hex.EncodeToString(root[:6]), Recomputed: "root " + hex.EncodeToString(c.Root[:6]),
		Reason: fmt.Sprintf("the first %d records are not the ones the checkpoint signed: the log was rewritten or rolled back", c.Size)})
}

func integrityFinding(file string, ve *chain.VerifyError) Finding {
	return Finding{File: file, Seq: ve.Seq, Kind: FindIntegrity, Recorded: ve.Got, Recomputed: ve.Want,
		Reason: fmt.Sprintf("%s (offset %d)", ve.Reason, ve.Offset), Torn: ve.Torn}
}

func sortReport(rep *LogReport) {
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i], rep.Findings[j]
		if a.Seq != b.Seq {
			return a.Seq < b.Seq
		}
		return a.Kind < b.Kind
	})
	sort.SliceStable(rep.Unevaluable, func(i, j int) bool { return rep.Unevaluable[i].Seq < rep.Unevaluable[j].Seq })
}

// verifier holds what the sessions of one log share: the evidence store
// and the policies loaded so far, by version (a long log has many
// sessions under one policy).
type verifier struct {
	file      string
	ev        chain.Evidence
	noStore   bool // the evidence store does not exist at all
	key       string
	approvers []string
	mu        sync.Mutex
	policies  map[string]*policyEntry
	findings  []Finding // from checkpoint records, read in order

	// texts caches evidence text by digest: content is addressed by its
	// hash, so one read serves every result that shares it.
	texts     map[string]string
	textBytes int
}

// maxCachedText bounds the evidence text kept in memory, and
// maxCachedOne the text of one output worth keeping: the outputs that
// repeat are short ("Message sent"), and a large one kept would be
// memory a large session needs.
const (
	maxCachedText = 8 << 20
	maxCachedOne  = 64 << 10
)

// inFlight bounds the evidence being read and normalized at once, in
// bytes, across every log and session of the process: an output costs a
// few times its size while it is decoded, and workers times outputs must
// stay within the memory bound. One larger than the bound runs alone.
var inFlight = semaphore.NewWeighted(maxInFlight)

const maxInFlight = 8 << 20

// evidence returns the output text of the evidence stored under digest.
func (v *verifier) evidence(digest string) (string, error) {
	v.mu.Lock()
	text, ok := v.texts[digest]
	v.mu.Unlock()
	if ok {
		return text, nil
	}
	data, err := v.ev.Get(digest)
	if err != nil {
		return "", err
	}
	if text, err = engine.OutputFromJSON(data); err != nil {
		return "", fmt.Errorf("evidence %s is not a tool result: %v", digest, err)
	}
	if len(text) > maxCachedOne {
		return text, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.textBytes+len(text) > maxCachedText {
		v.texts, v.textBytes = map[string]string{}, 0
	}
	if v.texts == nil {
		v.texts = map[string]string{}
	}
	v.texts[digest] = text
	v.textBytes += len(text)
	return text, nil
}

type policyEntry struct {
	p   *engine.Policy
	err string
}

func (v *verifier) policy(text, version string) (*engine.Policy, string) {
	sum := sha256.Sum256([]byte(text))
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != version {
		return nil, fmt.Sprintf("the embedded policy text hashes to %s, not its recorded version %s: it was edited", shortHex(got), shortHex(version))
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.policies[version]; ok {
		return e.p, e.err
	}
	e := &policyEntry{}
	p, err := engine.Load("embedded policy", []byte(text))
	switch {
	case err != nil:
		e.err = fmt.Sprintf("the embedded policy does not load: %v", err)
	case !bytes.Equal(p.Canonical(), []byte(text)):
		e.err = "the embedded policy is not in canonical form"
	default:
		e.p = p
	}
	v.policies[version] = e
	return e.p, e.err
}

func shortHex(s string) string {
	if len(s) > 19 {
		return s[:19]
	}
	return s
}

// checkpointRecord checks a checkpoint written into the log against the
// records before it.
func (v *verifier) checkpointRecord(rec chain.Record, root [32]byte) {
	fail := func(reason string) {
		v.findings = append(v.findings, Finding{File: v.file, Seq: rec.Seq, Session: rec.Session, Kind: FindCheckpoint, Reason: reason})
	}
	var body chain.CheckpointBody
	if err := chain.DecodeBody(rec.Body, &body); err != nil {
		fail(fmt.Sprintf("checkpoint record: %v", err))
		return
	}
	var c chain.Checkpoint
	var err error
	if v.key != "" {
		c, err = chain.OpenCheckpoint([]byte(body.Note), v.key)
	} else {
		text, _, _ := strings.Cut(body.Note, "\n\n")
		c, err = chain.ParseCheckpoint([]byte(text + "\n"))
	}
	if err != nil {
		fail(err.Error())
		return
	}
	switch {
	case c.Size != rec.Seq:
		fail(fmt.Sprintf("checkpoint record %d signs %d records, not the %d before it", rec.Seq, c.Size, rec.Seq))
	case c.Root != root:
		fail(fmt.Sprintf("checkpoint record %d signs a root that is not the root of the records before it: they were rewritten", rec.Seq))
	}
}

// sessionSet is the sessions one worker verifies.
type sessionSet struct {
	v           *verifier
	sessions    map[string]*vsession
	findings    []Finding
	unevaluable []Unevaluable
	calls       int
	contents    int   // result records that refer to content
	failed      error // an internal error: the set's results are incomplete
	// fatal is a spill file that failed: decisions after it cannot be
	// trusted either way, so the log cannot be verified.
	fatal error
}

// close gives back the spilled output of the sessions that never ended.
func (set *sessionSet) close() {
	for _, vs := range set.sessions {
		if vs.s != nil {
			vs.s.close()
			vs.s = nil
		}
	}
}

// safeRecord feeds one record to its session, turning a panic into an
// error that names the record.
func safeRecord(set *sessionSet, rec chain.Record) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error at record %d (session %q): %v", rec.Seq, rec.Session, r)
		}
	}()
	set.record(rec)
	return nil
}

type vsession struct {
	s      *stepper // nil when the session record was unusable
	ended  bool
	broken bool // its policy could not be loaded: its calls cannot be judged
	// given and used are the session's grants by id: the call each was
	// given for and the call a recorded decision used it on.
	given map[string]string
	used  map[string]string
	// approvers are the approver keys the session trusts; elicited the
	// asked calls the gateway put to the client, asked when each call was
	// recorded; refused the grants whose signature failed, and why.
	approvers []string
	elicited  map[string]bool
	asked     map[string]time.Time
	refused   map[string]string
	// lost names the outputs the engine counts as purged that were in
	// truth missing or altered, so a decision that depended on one says
	// which.
	lost map[string]string
}

// lose notes that the output src is unknown because its evidence is
// missing or altered (how), not purged.
func (vs *vsession) lose(src engine.Source, how string) {
	if vs.lost == nil {
		vs.lost = map[string]string{}
	}
	vs.lost["purged "+src.String()] = how + " " + src.String()
}

func (set *sessionSet) find(rec chain.Record, call, kind, recorded, recomputed, reason string) {
	set.findings = append(set.findings, Finding{File: set.v.file, Seq: rec.Seq, Session: rec.Session, Call: call,
		Kind: kind, Recorded: recorded, Recomputed: recomputed, Reason: reason})
}

func (set *sessionSet) record(rec chain.Record) {
	if set.fatal != nil {
		return
	}
	vs := set.sessions[rec.Session]
	if rec.Kind == chain.KindSession {
		if vs != nil {
			set.find(rec, "", FindRecord, "", "", fmt.Sprintf("session %q starts twice", rec.Session))
			return
		}
		set.sessions[rec.Session] = set.open(rec)
		return
	}
	switch {
	case vs == nil:
		set.find(rec, "", FindRecord, "", "", fmt.Sprintf("%s record for session %q, which has no session record before it", rec.Kind, rec.Session))
		return
	case vs.ended:
		set.find(rec, "", FindRecord, "", "", fmt.Sprintf("%s record after session %q ended", rec.Kind, rec.Session))
		return
	case vs.broken:
		// The session's one finding says why; its calls are counted, not
		// judged.
		if rec.Kind == chain.KindCall {
			set.calls++
		}
		return
	}
	var err error
	switch rec.Kind {
	case chain.KindTools:
		var b chain.ToolsBody
		if err = chain.DecodeBody(rec.Body, &b); err == nil {
			if b.Repin {
				vs.s.state.Repin(records.ToolDefs(b.Tools))
			} else {
				vs.s.state.ListTools(records.ToolDefs(b.Tools))
			}
			if len(b.Accept) > 0 {
				if !vs.s.state.MayAccept(b.AcceptedBy) {
					set.find(rec, "", FindGrant, b.AcceptedBy, "", "changed tool definitions were accepted by nobody, or by the principal itself: not applied")
				} else if problem := vs.acceptProblem(rec, &b); problem != "" {
					set.find(rec, "", FindGrant, b.AcceptedBy, "not accepted", problem+": not applied")
				} else {
					vs.s.state.Accept(records.ToolDefs(b.Accept))
				}
			}
		}
	case chain.KindCall:
		set.calls++
		err = set.call(vs, rec)
	case chain.KindGrant:
		err = set.grant(vs, rec)
	case chain.KindResult:
		err = set.result(vs, rec)
	case chain.KindEnd:
		var b chain.EndBody
		err = chain.DecodeBody(rec.Body, &b)
		// Keep the entry, to catch records after the end, but not the
		// state: a long log must not hold every session's output.
		vs.s.close()
		vs.ended, vs.s, vs.given, vs.used = true, nil, nil, nil
		vs.elicited, vs.asked, vs.refused = nil, nil, nil
	}
	if vs.s != nil && vs.s.err() != nil {
		set.fatal = vs.s.err()
	}
	if err != nil {
		set.find(rec, "", FindRecord, "", "", fmt.Sprintf("%s record: %v", rec.Kind, err))
	}
}

func (set *sessionSet) open(rec chain.Record) *vsession {
	var b chain.SessionBody
	if err := chain.DecodeBody(rec.Body, &b); err != nil {
		set.find(rec, "", FindRecord, "", "", fmt.Sprintf("session record: %v", err))
		return &vsession{broken: true}
	}
	if b.Engine != engine.Version {
		// Recomputing under other semantics proves nothing either way.
		set.find(rec, "", FindPolicy, b.Engine, engine.Version,
			fmt.Sprintf("the session was decided by engine %q and this is %q: its verdicts are not recomputed", b.Engine, engine.Version))
		return &vsession{broken: true}
	}
	p, problem := set.v.policy(b.Policy, b.PolicyVersion)
	if problem != "" {
		set.find(rec, "", FindPolicy, b.PolicyVersion, "", problem)
		return &vsession{broken: true}
	}
	approvers := b.Approvers
	if set.v.approvers != nil {
		approvers = nil
		for _, k := range b.Approvers {
			if slices.Contains(set.v.approvers, k) {
				approvers = append(approvers, k)
				continue
			}
			set.find(rec, "", FindGrant, k, "", fmt.Sprintf("the session trusts approver key %s, which is not one of the keys verify was given: it approves nothing", k))
		}
	}
	return &vsession{s: newStepper(p, rec.Session, b.Server, engine.Principal(b.Principal), records.ToolDefs(b.Tools)),
		given: map[string]string{}, used: map[string]string{}, approvers: approvers,
		elicited: map[string]bool{}, asked: map[string]time.Time{}, refused: map[string]string{}}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (set *sessionSet) call(vs *vsession, rec chain.Record) error {
	var b chain.CallBody
	if err := chain.DecodeBody(rec.Body, &b); err != nil {
		return err
	}
	if b.Args == nil {
		return errors.New(`"args" must be an object`)
	}
	call := &engine.Call{ID: b.Call, Server: orDefault(b.Server, vs.s.state.Server), Tool: b.Tool, Args: b.Args, Digest: b.Digest}
	for _, r := range b.Redacted {
		p, err := engine.ParsePath(r)
		if err != nil {
			return fmt.Errorf("redacted: %v", err)
		}
		call.Redacted = append(call.Redacted, p)
	}
	if len(call.Redacted) == 0 {
		if want := argsDigest(rec.Body, b.Args); want != b.Digest {
			set.find(rec, b.Call, FindRecord, b.Digest, want, "the call's digest is not the digest of its arguments: the arguments or the digest were edited")
		}
	} else if !strings.HasPrefix(b.Digest, "hmac-sha256:") {
		set.find(rec, b.Call, FindRecord, b.Digest, "hmac-sha256:…", "a call with redacted arguments must bind grants to a keyed digest")
	}
	pc, err := vs.s.call(call)
	if err != nil {
		return err
	}
	vs.asked[b.Call] = rec.TS
	if b.Elicit {
		vs.elicited[b.Call] = true
	}
	d := vs.s.evaluate(call, rec.TS)
	set.compare(vs, rec, b.Call, b.Tool, b.Decision, d)
	vs.s.commit(pc, records.ToDecision(b.Decision))
	vs.spend(b.Decision.Grant, b.Call)
	return nil
}

// argsDigest is engine.ArgsDigest of a call body's arguments, taken from
// the body's bytes: a body DecodeBody accepted holds them in exactly the
// canonical encoding the digest is over.
func argsDigest(body []byte, args map[string]any) string {
	raw, ok := chain.RawField(body, "args")
	if !ok {
		return engine.ArgsDigest(args)
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// compare reports a recorded decision the engine does not recompute, and
// lists one it cannot recompute.
func (set *sessionSet) compare(vs *vsession, rec chain.Record, call, tool string, got chain.Decision, want engine.Decision) {
	if want.Unevaluable {
		for _, v := range want.Possible {
			if string(v) == got.Verdict {
				reason := want.Reason
				for purged, lost := range vs.lost {
					reason = strings.ReplaceAll(reason, purged, lost)
				}
				set.unevaluable = append(set.unevaluable, Unevaluable{File: set.v.file, Seq: rec.Seq, Session: rec.Session,
					Call: call, Tool: tool, Recorded: got.Verdict, Reason: reason})
				return
			}
		}
		set.find(rec, call, FindVerdict, got.Verdict, joinVerdicts(want.Possible),
			fmt.Sprintf("the recorded verdict is not one this call could have had: %s", want.Reason))
		return
	}
	rw := records.FromDecision(want)
	diff := decisionDiff(got, rw)
	if diff == "" {
		return
	}
	kind := FindVerdict
	if got.Check == string(engine.CheckApproval) || got.Grant != "" {
		// The recorded decision rests on a grant: say what is wrong with it.
		kind = FindGrant
		if why, ok := vs.refused[got.Grant]; ok && got.Grant != "" {
			diff = fmt.Sprintf("grant %s does not count: %s", got.Grant, why)
		} else if by, ok := vs.used[got.Grant]; ok && got.Grant != rw.Grant {
			diff = fmt.Sprintf("grant %s was already used by call %s: a grant is single use", got.Grant, by)
		} else if _, ok := vs.given[got.Grant]; !ok && got.Grant != "" {
			diff = fmt.Sprintf("no grant %s was given in this session", got.Grant)
		}
	}
	set.find(rec, call, kind, summary(got), summary(rw), diff)
}

// spend notes that a recorded decision used grant g on call.
func (vs *vsession) spend(g, call string) {
	if g != "" {
		if _, ok := vs.used[g]; !ok {
			vs.used[g] = call
		}
	}
}

func joinVerdicts(vs []engine.Verdict) string {
	var s []string
	for _, v := range vs {
		s = append(s, string(v))
	}
	return strings.Join(s, " or ")
}

func summary(d chain.Decision) string {
	s := d.Verdict + " by " + d.Check
	if d.Rule != "" {
		s += " (" + d.Rule + ")"
	}
	return s
}

// decisionDiff explains how two decisions differ, or returns "".
func decisionDiff(got, want chain.Decision) string {
	switch {
	case got.Verdict != want.Verdict || got.Check != want.Check || got.Rule != want.Rule:
		return "recomputed: " + want.Reason
	case got.Reason != want.Reason:
		return fmt.Sprintf("same verdict, different reason: recorded %q, recomputed %q", got.Reason, want.Reason)
	case got.Grant != want.Grant:
		return fmt.Sprintf("recorded grant %q, recomputed %q", got.Grant, want.Grant)
	case got.Destination != want.Destination || !sameSource(got.TaintedBy, want.TaintedBy):
		return "same verdict, different taint source or destination"
	}
	return ""
}

func sameSource(a, b *chain.Source) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func (set *sessionSet) grant(vs *vsession, rec chain.Record) error {
	var b chain.GrantBody
	if err := chain.DecodeBody(rec.Body, &b); err != nil {
		return err
	}
	exp, err := time.Parse(chain.TimeFormat, b.Expires)
	if err != nil {
		return fmt.Errorf("expires %q is not %s", b.Expires, chain.TimeFormat)
	}
	if b.Answer != "approve" && b.Answer != "decline" {
		return fmt.Errorf("answer %q is not approve or decline", b.Answer)
	}
	pc, err := vs.s.lookup(b.Call)
	if err != nil {
		set.find(rec, b.Call, FindGrant, "", "", "grant "+err.Error())
		return nil
	}
	vs.given[b.Grant] = b.Call
	g := engine.Grant{ID: b.Grant, Server: orDefault(b.Server, vs.s.state.Server), Tool: b.Tool, Digest: b.Digest,
		Approver: b.Approver, Approve: b.Answer == "approve", Expires: exp}
	// An answer that is not authentic approves nothing: the finding says
	// why, and the call it answers is recomputed as declined (a grant for
	// a later call is not given at all).
	if problem := vs.grantProblem(rec, &b); problem != "" {
		set.find(rec, b.Call, FindGrant, b.Approver+" "+b.Answer, "not approved", problem)
		vs.refused[b.Grant] = problem
		if b.Decision == nil {
			return nil
		}
		g.Approve = false
	}
	// A grant that records a decision claims to have settled its call:
	// that call must have been asked and not settled since. One without
	// is for a later identical call.
	if b.Decision == nil {
		vs.s.state.AddGrant(g)
		return nil
	}
	d, settles := vs.s.answerWaiting(pc, g, rec.TS)
	if !settles {
		set.find(rec, b.Call, FindGrant, summary(*b.Decision), "no decision",
			fmt.Sprintf("the grant records a decision, but call %q was not waiting for an answer", b.Call))
		vs.s.state.AddGrant(g)
		return nil
	}
	set.compare(vs, rec, b.Call, pc.call.Tool, *b.Decision, d)
	vs.s.settle(pc, records.ToDecision(*b.Decision))
	vs.spend(b.Decision.Grant, b.Call)
	return nil
}

func (set *sessionSet) result(vs *vsession, rec chain.Record) error {
	var b chain.ResultBody
	if err := chain.DecodeBody(rec.Body, &b); err != nil {
		return err
	}
	if b.Content != "" {
		set.contents++
	}
	switch b.Status {
	case chain.StatusOK, chain.StatusError, chain.StatusFailed:
	default:
		return fmt.Errorf("status %q is not ok, error or failed", b.Status)
	}
	if err := checkChannel(b); err != nil {
		return err
	}
	src, err := vs.s.source(b.Call, b.Server, b.Tool, int(rec.Seq))
	if err != nil {
		set.find(rec, b.Call, FindRecord, "", "", "result "+err.Error())
		return nil
	}
	failed := b.Status != chain.StatusOK
	if b.Content == "" {
		vs.s.output(src, b.Call, failed, "", true)
		return nil
	}
	n := min(max(b.Size, 1), maxInFlight)
	if err := inFlight.Acquire(context.Background(), n); err != nil {
		return err
	}
	defer inFlight.Release(n)
	text, err := set.v.evidence(b.Content)
	switch {
	case err == nil:
		vs.s.output(src, b.Call, failed, text, true)
	case errors.Is(err, chain.ErrPurged):
		vs.s.output(src, b.Call, failed, "", false)
	case errors.Is(err, chain.ErrMissing) && set.v.noStore:
		// Verified without its store, as the caller was warned: every
		// output is unknown, and what depended on one is unevaluable.
		vs.s.output(src, b.Call, failed, "", false)
	case errors.Is(err, chain.ErrMissing):
		set.find(rec, b.Call, FindEvidence, b.Content, "", fmt.Sprintf("evidence %s is missing: it is not in the store and no purge removed it", b.Content))
		vs.lose(src, "missing")
		vs.s.output(src, b.Call, failed, "", false)
	default:
		set.find(rec, b.Call, FindEvidence, b.Content, "", err.Error())
		var ee *chain.EvidenceError
		if errors.As(err, &ee) {
			vs.lose(src, "altered")
		}
		vs.s.output(src, b.Call, failed, "", false)
	}
	return nil
}

// grantProblem says why a grant record is not an authentic answer, or
// returns "". An out-of-band grant must carry a signature, by a key the
// session trusts and not the principal's, over exactly this ask, made
// after the call was asked and not after the grant was recorded. Only an
// elicitation grant is unsigned, and it must settle a call the gateway
// marked as put to the client (elicit), with the id the gateway gives it.
func (vs *vsession) grantProblem(rec chain.Record, b *chain.GrantBody) string {
	if b.Signature == nil {
		switch {
		case b.Approver != chain.ElicitationApprover:
			return fmt.Sprintf("grant %s by %q is not signed: an out-of-band answer counts only signed by an approver key", b.Grant, b.Approver)
		case b.Decision == nil || !vs.elicited[b.Call] || b.Grant != "elicit-"+b.Call:
			return fmt.Sprintf("grant %s claims to be an answer through the client, but call %s was not put to the client (or the grant does not settle it)", b.Grant, b.Call)
		}
		return ""
	}
	ap := chain.Approval{ID: b.Grant, Kind: chain.ApproveCall, Session: rec.Session, Server: orDefault(b.Server, vs.s.state.Server),
		Tool: b.Tool, Digest: b.Digest, Answer: b.Answer}
	return vs.signatureProblem(rec, "grant "+b.Grant, ap, *b.Signature, b.Approver, vs.asked[b.Call])
}

// acceptProblem is grantProblem for a tools record accepting a changed
// definition: one definition, signed as a "definition" approval.
func (vs *vsession) acceptProblem(rec chain.Record, b *chain.ToolsBody) string {
	if b.AcceptSignature == nil {
		return fmt.Sprintf("the acceptance by %q is not signed", b.AcceptedBy)
	}
	if len(b.Accept) != 1 {
		return fmt.Sprintf("a signed acceptance is for one definition, not %d", len(b.Accept))
	}
	ap := chain.Approval{ID: b.AcceptID, Kind: chain.ApproveDefinition, Session: rec.Session, Server: vs.s.state.Server,
		Tool: b.Accept[0].Name, Digest: b.Accept[0].Digest, Answer: "approve"}
	return vs.signatureProblem(rec, "the acceptance "+b.AcceptID, ap, *b.AcceptSignature, b.AcceptedBy, time.Time{})
}

func (vs *vsession) signatureProblem(rec chain.Record, what string, ap chain.Approval, sig chain.Signature, approver string, asked time.Time) string {
	name, err := chain.TrustedApprover(ap, sig, vs.approvers, vs.s.state.Principal.Subject)
	if err != nil {
		return fmt.Sprintf("%s: %v", what, err)
	}
	if name != approver {
		return fmt.Sprintf("%s names approver %q but is signed by %q", what, approver, name)
	}
	signed, err := time.Parse(chain.TimeFormat, sig.Time)
	switch {
	case err != nil:
		return fmt.Sprintf("%s: signed time %q is not %s", what, sig.Time, chain.TimeFormat)
	case signed.Before(asked.Truncate(time.Second)):
		return fmt.Sprintf("%s was signed at %s, before the call was asked", what, sig.Time)
	case signed.After(rec.TS.Add(time.Minute)):
		return fmt.Sprintf("%s was signed at %s, after it was recorded", what, sig.Time)
	}
	return ""
}

// checkChannel holds a result of another channel than tools/call to its
// form: no call, and its channel as its tool. The tool is the provenance
// trusted_sources match, so a record naming a trusted tool for a log
// message or a resource would make its text silently trusted.
func checkChannel(b chain.ResultBody) error {
	switch {
	case b.Channel == "":
		return nil
	case b.Channel == "tools/call":
		return errors.New(`channel "tools/call" is written as no channel`)
	case b.Call != "":
		return fmt.Errorf("a %s output answers no call, but names call %q", b.Channel, b.Call)
	case b.Tool != b.Channel:
		return fmt.Errorf("a %s output's tool must be its channel, not %q", b.Channel, b.Tool)
	case b.Status == chain.StatusError:
		return fmt.Errorf("a %s output is ok or failed; error is a tool's isError", b.Channel)
	}
	return nil
}
