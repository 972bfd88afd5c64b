package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"bailiff/internal/demo"
)

// The offline half of the demo runs each command as the binary would,
// through run, so what it shows is what a user typing the same command
// gets; the transcript prints each command line.

// cli runs one bailiff command and keeps its output in file (when named)
// under the demo directory.
func (d *demoRun) cli(file string, args ...string) (code int, out []byte, errs string) {
	var stdout, stderr bytes.Buffer
	code = run(args, nil, &stdout, &stderr)
	if file != "" {
		if err := os.WriteFile(d.path(file), stdout.Bytes(), 0o644); err != nil && code == 0 {
			code, errs = exitUsage, err.Error()
		}
	}
	return code, stdout.Bytes(), errs + stderr.String()
}

// need refuses a line of a command's json output that lacks a field the
// demo counts on: read as 0, a missing "unevaluable" would pass.
func need(o map[string]any, keys ...string) error {
	for _, k := range keys {
		if _, ok := o[k]; !ok {
			return fmt.Errorf("its %v line has no %q", o["type"], k)
		}
	}
	return nil
}

// jsonLines decodes the objects of a --format json output, one per line.
func jsonLines(out []byte) ([]map[string]any, error) {
	var objs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("reading %q: %v", sc.Text(), err)
		}
		objs = append(objs, m)
	}
	return objs, sc.Err()
}

func (d *demoRun) verify() error {
	d.stage.Next("bailiff verify")
	code, out, errs := d.cli("", "verify", "--format", "json", d.path("audit.jsonl"))
	d.sum.Verify = demoVerify{Command: "bailiff verify audit.jsonl", Exit: code}
	objs, err := jsonLines(out)
	if err != nil || code == exitUsage {
		return fmt.Errorf("verify: %v %s", err, errs)
	}
	for _, o := range objs {
		switch o["type"] {
		case "log":
			if err := need(o, "records", "calls", "unevaluable"); err != nil {
				return fmt.Errorf("verify: %v", err)
			}
			d.sum.Verify.Records, d.sum.Verify.Calls = num(o["records"]), num(o["calls"])
			d.sum.Verify.Unevaluable = num(o["unevaluable"])
		case "finding":
			d.sum.Verify.Findings++
		}
	}
	return nil
}

// tamper edits a copy of the log the way someone hiding a refusal would
// (the first denied call's verdict made an allow; with no denial, the
// first allow made a deny) and verifies the copy.
func (d *demoRun) tamper() error {
	d.stage.Next("bailiff verify, on a tampered copy")
	log, err := os.ReadFile(d.path("audit.jsonl"))
	if err != nil {
		return err
	}
	from, to := `"verdict":"deny"`, `"verdict":"allow"`
	edit := "the first denied call's verdict changed to allow"
	if !bytes.Contains(log, []byte(from)) {
		from, to, edit = to, from, "the first allowed call's verdict changed to deny"
	}
	if err := os.WriteFile(d.path("tampered.jsonl"), bytes.Replace(log, []byte(from), []byte(to), 1), 0o644); err != nil {
		return err
	}
	code, out, errs := d.cli("", "verify", "--format", "json", "--evidence", d.path("audit.jsonl.evidence"), d.path("tampered.jsonl"))
	t := demoVerify{Command: "bailiff verify --evidence audit.jsonl.evidence tampered.jsonl", Exit: code, Edit: edit}
	objs, err := jsonLines(out)
	if err != nil || code == exitUsage {
		return fmt.Errorf("verify of the tampered copy: %v %s", err, errs)
	}
	for _, o := range objs {
		if o["type"] == "finding" {
			t.Findings++
			if t.First == "" {
				// The byte offset depends on the length of the demo
				// directory's name; the record number says where.
				reason := offsetNote.ReplaceAllString(fmt.Sprint(o["reason"]), "")
				t.First = fmt.Sprintf("%v at record %v: %s", o["kind"], num(o["seq"]), reason)
			}
		}
	}
	d.sum.Tampered = t
	return nil
}

func (d *demoRun) shadow() error {
	d.stage.Next("bailiff shadow")
	code, out, errs := d.cli("shadow.json", "shadow", "--candidate", d.path("stricter.yaml"), "--format", "json", d.path("audit.jsonl"))
	if code != exitOK {
		return fmt.Errorf("shadow: exit %d: %s", code, errs)
	}
	s := demoShadow{Command: "bailiff shadow --candidate stricter.yaml audit.jsonl", Candidate: "stricter.yaml: at most one email per session"}
	objs, err := jsonLines(out)
	if err != nil {
		return fmt.Errorf("shadow: %v", err)
	}
	for _, o := range objs {
		if o["type"] == "summary" {
			if err := need(o, "counts"); err != nil {
				return fmt.Errorf("shadow: %v", err)
			}
			counts, _ := o["counts"].(map[string]any)
			s.Changes = map[string]int{}
			for k, v := range counts {
				s.Changes[k] = num(v)
			}
		}
	}
	d.sum.Shadow = s
	return nil
}

func (d *demoRun) ablate() error {
	d.stage.Next("bailiff ablate")
	var labels strings.Builder
	for _, c := range d.sum.Calls {
		label := "benign"
		if c.Attack {
			label = "attack"
		}
		fmt.Fprintf(&labels, `{"session":%q,"call":%q,"label":%q}`+"\n", demo.Session, c.Call, label)
	}
	if err := os.WriteFile(d.path("labels.jsonl"), []byte(labels.String()), 0o644); err != nil {
		return err
	}
	code, out, errs := d.cli("ablate.json", "ablate", "--labels", d.path("labels.jsonl"), "--format", "json", d.path("audit.jsonl"))
	if code != exitOK {
		return fmt.Errorf("ablate: exit %d: %s", code, errs)
	}
	objs, err := jsonLines(out)
	if err != nil {
		return fmt.Errorf("ablate: %v", err)
	}
	a := demoAblate{Command: "bailiff ablate --labels labels.jsonl audit.jsonl"}
	for _, o := range objs {
		switch o["type"] {
		case "policy":
			if err := need(o, "attacks", "attacks_stopped", "benign_stopped"); err != nil {
				return fmt.Errorf("ablate: %v", err)
			}
			a.Attacks, a.Stopped, a.BenignStopped = num(o["attacks"]), num(o["attacks_stopped"]), num(o["benign_stopped"])
		case "check":
			if o["dead"] == true {
				a.Dead = append(a.Dead, fmt.Sprint(o["check"]))
				continue
			}
			if o["earned_nothing_alone"] == true {
				a.Idle = append(a.Idle, fmt.Sprint(o["check"]))
				continue
			}
			a.Checks = append(a.Checks, demoAblateRow{Check: fmt.Sprint(o["check"]), Changed: num(o["changed"]), Stops: num(o["attacks_stopped_alone"])})
		}
	}
	d.sum.Ablate = a
	return nil
}

func (d *demoRun) report() error {
	d.stage.Next("bailiff report")
	code, _, errs := d.cli("", "report", "--audit", d.path("audit.jsonl"), "--shadow", d.path("shadow.json"), "--ablate", d.path("ablate.json"),
		"-o", d.path("pack.md"), "--html", d.path("pack.html"))
	d.sum.Report = demoReport{Command: "bailiff report --audit audit.jsonl --shadow shadow.json --ablate ablate.json -o pack.md --html pack.html", Exit: code}
	if code == exitUsage {
		return fmt.Errorf("report: %s", errs)
	}
	pack, err := os.ReadFile(d.path("pack.md"))
	if err != nil {
		return err
	}
	if m := packStatus.FindSubmatch(pack); m != nil {
		d.sum.Report.Status = strings.ToLower(string(m[1]))
	}
	return nil
}

var packStatus = regexp.MustCompile(`(?m)^\*\*Status: ([A-Z]+)\.\*\*`)

var offsetNote = regexp.MustCompile(` \(offset \d+\)$`)

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}
